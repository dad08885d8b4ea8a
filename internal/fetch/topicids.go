package fetch

import (
	"encoding/binary"

	"github.com/IBM/sarama"
)

// Fetch v13 (KIP-516) names topics by id instead of by name, in requests
// and responses; nothing else changed from v12. sarama encodes and
// decodes Fetch up to v12, so a broker loop builds a v12 request and its
// connection's tap rewrites it to v13 as it is written (each topic name
// replaced by the topic's id), and rewrites the v13 response back to v12
// (each id replaced by the name) before sarama reads it.
//
// Why: a broker keeps a fetch session's partitions in a hash table keyed
// by topic and partition, hashing the topic's id when the session uses
// ids and its name otherwise. Topics named alike hash to one dense range,
// which makes a large session slow to update (see
// Config.MaxSessionPartitions); ids spread them. With ids a loop keeps its
// session at any size.
//
// A loop uses ids when the client's Kafka version is 3.1 or later (Fetch
// v13), the fetcher reads record batches itself (the tap; not
// Config.SaramaDecodes), the client knows topic ids (topicIDer:
// internal/leadercache's does) and it knows the id of every partition's
// topic in the request. Otherwise the request goes as v12, by name.

// Kafka errors of topic ids that sarama does not name.
const (
	errUnknownTopicID       = sarama.KError(100) // UNKNOWN_TOPIC_ID
	errInconsistentTopicID  = sarama.KError(103) // INCONSISTENT_TOPIC_ID
	errFetchSessionTopicID  = sarama.KError(106) // FETCH_SESSION_TOPIC_ID_ERROR
	fetchVersionWithTopicID = 13
)

// topicIDer is a client that knows topic ids from its metadata.
type topicIDer interface {
	TopicID(topic string) (sarama.Uuid, bool)
}

// topicIDsOK reports whether a fetcher over client with cfg names topics
// by id: the client's Kafka version 3.1 or later, a client that knows
// topic ids, and the fetcher's own reading of responses (the tap).
func topicIDsOK(client sarama.Client, cfg Config) bool {
	_, ok := client.(topicIDer)
	return ok && !cfg.SaramaDecodes && client.Config().Version.IsAtLeast(sarama.V3_1_0_0)
}

// topicIDs maps the topics a loop's requests name to their ids and back.
// Immutable once a request uses it (the tap reads it as the response
// comes): a loop adds topics to a copy.
type topicIDs struct {
	byName map[string]sarama.Uuid
	byID   map[sarama.Uuid]string
}

// requestIDs returns the ids for the request l.inReq makes, nil when it
// goes by name: ids not in use, or a partition's topic id unknown. The
// map only grows (an incremental request may forget partitions of topics
// it no longer names, which the response-side lookup never needs but the
// request's rewrite does); a topic whose id changed (deleted and created
// again) starts a new map and a new session.
func (l *brokerLoop) requestIDs() *topicIDs {
	if !l.f.topicIDs {
		return nil
	}
	cur := l.ids
	add, changed, ok := l.newIDs(cur)
	if changed {
		cur = nil
		l.sess.reset(true)
		add, _, ok = l.newIDs(nil)
	}
	if !ok {
		return nil
	}
	if add == nil {
		return cur
	}
	next := &topicIDs{byName: map[string]sarama.Uuid{}, byID: map[sarama.Uuid]string{}}
	if cur != nil {
		for name, id := range cur.byName {
			next.byName[name], next.byID[id] = id, name
		}
	}
	for name, id := range add {
		next.byName[name], next.byID[id] = id, name
	}
	l.ids = next
	return next
}

// newIDs returns the topics of l.inReq that cur does not have, with their
// ids (nil: none); changed when cur has another id for one of them; ok
// false when a partition's topic id is unknown, or one name comes with
// two ids.
func (l *brokerLoop) newIDs(cur *topicIDs) (add map[string]sarama.Uuid, changed, ok bool) {
	last := ""
	for i := range l.inReq {
		rp := &l.inReq[i]
		if rp.topicID == (sarama.Uuid{}) {
			return nil, false, false
		}
		if rp.p.topic == last {
			continue // partitions of a topic are usually next to each other
		}
		last = rp.p.topic
		if cur != nil {
			if id, ok := cur.byName[last]; ok {
				if id != rp.topicID {
					return nil, true, false
				}
				continue
			}
		}
		if id, ok := add[last]; ok && id != rp.topicID {
			return nil, false, false
		}
		if add == nil {
			add = map[string]sarama.Uuid{}
		}
		add[last] = rp.topicID
	}
	return add, false, true
}

// fetchV13 rewrites frame, a Fetch v12 request frame whole (size first),
// to v13: each topic name in the topics to fetch and those to forget
// replaced by its id. It appends the result to out and returns it with
// the request's correlation id; ok is false when frame is not one whole
// Fetch v12 request or names a topic ids does not have (out is then
// unusable). The v12 request (flexible, request header v2):
//
//	size int32, api_key int16 = 1, api_version int16, correlation_id int32,
//	client_id nullable string (int16 length), tags;
//	replica_id, max_wait_ms, min_bytes, max_bytes int32, isolation_level
//	int8, session_id, session_epoch int32,
//	topics [topic compact string, partitions [partition, current_leader_epoch
//	int32, fetch_offset int64, last_fetched_epoch int32, log_start_offset
//	int64, partition_max_bytes int32, tags], tags],
//	forgotten_topics_data [topic compact string, partitions [int32], tags],
//	rack_id compact string, tags
func fetchV13(frame []byte, ids *topicIDs, out []byte) (_ []byte, corr int32, ok bool) {
	if len(frame) < 14 || int(binary.BigEndian.Uint32(frame)) != len(frame)-4 ||
		binary.BigEndian.Uint16(frame[4:]) != 1 || binary.BigEndian.Uint16(frame[6:]) != 12 {
		return out, 0, false
	}
	corr = int32(binary.BigEndian.Uint32(frame[8:]))
	r := wireReader{b: frame, i: 12, flex: true}
	if n := int16(r.int16()); n > 0 {
		r.skip(int(n))
	}
	r.tags()
	r.skip(4*4 + 1 + 4 + 4)
	start := len(out)
	from := 0 // frame[from:] is still to be copied
	swap := func() bool {
		at := r.i
		name := r.str()
		id, known := ids.byName[name]
		if r.err != nil || !known {
			return false
		}
		out = append(out, frame[from:at]...)
		out = append(out, id[:]...)
		from = r.i
		return true
	}
	for range r.array() {
		if !swap() {
			return out, 0, false
		}
		for range r.array() {
			r.skip(32)
			r.tags()
		}
		r.tags()
	}
	for range r.array() {
		if !swap() {
			return out, 0, false
		}
		r.skip(4 * r.array())
		r.tags()
	}
	if r.err != nil {
		return out, 0, false
	}
	out = append(out, frame[from:]...)
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start-4))
	binary.BigEndian.PutUint16(out[start+6:], fetchVersionWithTopicID)
	return out, corr, true
}

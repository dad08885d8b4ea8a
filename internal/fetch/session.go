package fetch

import (
	"math"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/saramawire"
	"github.com/zkgroup/zkgroup/internal/shrink"
)

// A broker loop's fetch session (KIP-227, Fetch v7 and later): the broker
// keeps the partitions of the loop's requests, each with its fetch
// offset, size and epochs, so that a request after the first (full) one
// names only the partitions that changed since the one before
// (incremental), plus those to forget, and the response only the
// partitions with records or news (high watermark, log start, error). An
// idle partition then costs no bytes in requests or responses and no
// work on either side per fetch.
//
// What a partition being left out of an incremental request means to the
// broker is "unchanged: keep fetching it", so a partition that must not
// be fetched (its buffer is full, it is stopped, closed or gone to
// another broker) is forgotten, and named again (added) when it may be
// fetched again.
//
// The next request is full again (the session's id and epoch 0: the
// broker closes the old session and opens a new one) after the broker
// answered INVALID_FETCH_SESSION_EPOCH, after a new connection (the
// request before may have reached the broker without its answer reaching
// us) and at the start; after FETCH_SESSION_ID_NOT_FOUND it opens a new
// one (id 0). A broker that answers a full request with no session id
// (its session cache is full) is asked in full again each time, as
// without sessions. A loop with more than Config.MaxSessionPartitions
// partitions closes its session and names every partition each time,
// unless its requests name topics by id (see topicids.go). A session
// opened by name goes on by name, one opened by id by id: a request that
// would change that opens a new session.
type session struct {
	id    int32                       // the broker's id for it; 0: none
	epoch int32                       // of the next request; 0: the next is full
	parts map[topicPartition]sessPart // what the broker's session holds for us
	peak  shrink.Peak                 // of parts
	// withIDs: the session was opened by a request naming topics by id
	// (Fetch v13); its requests must keep doing so.
	withIDs bool
}

// sessPart is one partition as the session holds it: as last sent.
type sessPart struct {
	p         *Partition
	offset    int64
	size      int32
	epoch     int32 // current leader epoch
	lastEpoch int32 // last fetched epoch
}

// Kinds of request.
const (
	reqSessionless = iota // every partition named, no session (id 0, epoch -1)
	reqFull               // every partition named, opening a session (epoch 0)
	reqIncremental        // changes only, in the open session
)

// reset makes the next request full; keep tells whether the old session
// id is named in it (so that the broker closes that session).
func (s *session) reset(keep bool) {
	if !keep {
		s.id = 0
	}
	s.epoch = 0
	s.parts, s.peak = nil, shrink.Peak{}
}

// nextEpoch is the epoch after e (1 after the largest).
func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// part returns rp as the session would hold it.
func (rp *reqPart) part() sessPart {
	return sessPart{p: rp.p, offset: rp.offset, size: rp.size, epoch: rp.epoch, lastEpoch: rp.lastEpoch}
}

// addBlocks adds to req the partitions of l.inReq it must name: all but
// for an incremental request, where only those new to the session or
// changed, and sets what it forgets. It records what it sent for
// sessionSent.
func (l *brokerLoop) addBlocks(req *sarama.FetchRequest) {
	l.sent = l.sent[:0]
	l.forgot = l.forgot[:0]
	inSess := 0 // partitions of inReq the session holds
	for i := range l.inReq {
		rp := &l.inReq[i]
		if l.kind == reqIncremental {
			have, ok := l.sess.parts[topicPartition{rp.p.topic, rp.p.partition}]
			if ok {
				inSess++
			}
			if ok && have == rp.part() {
				continue
			}
		}
		l.sent = append(l.sent, i)
		req.AddBlock(rp.p.topic, rp.p.partition, rp.offset, rp.size, rp.epoch)
		if req.Version >= 12 && rp.lastEpoch >= 0 && saramawire.FetchOK {
			saramawire.SetLastFetchedEpoch(req, rp.p.topic, rp.p.partition, rp.lastEpoch)
		}
	}
	l.sent = shrink.Slice(l.sent)
	if l.kind != reqIncremental || inSess == len(l.sess.parts) {
		// Forgets none: not kept at the room of the last that forgot many.
		l.forgot = shrink.Slice(l.forgot)
		return // every partition of the session asked for (inReq's are distinct): none forgotten
	}
	clear(l.inReqSet)
	if l.inReqSet == nil {
		l.inReqSet = make(map[topicPartition]struct{}, len(l.inReq))
	}
	for i := range l.inReq {
		l.inReqSet[topicPartition{l.inReq[i].p.topic, l.inReq[i].p.partition}] = struct{}{}
	}
	l.inReqSetPeak.Note(len(l.inReqSet))
	l.inReqSet = shrink.Map(l.inReqSet, &l.inReqSetPeak)
	var forgotten map[string][]int32
	for k := range l.sess.parts {
		if !l.inSet(k) {
			if forgotten == nil {
				forgotten = map[string][]int32{}
			}
			forgotten[k.topic] = append(forgotten[k.topic], k.partition)
			l.forgot = append(l.forgot, k)
		}
	}
	l.forgot = shrink.Slice(l.forgot)
	if forgotten != nil {
		saramawire.SetForgotten(req, forgotten)
	}
}

// inSet reports whether k is asked for in this request (l.inReqSet is
// filled by addBlocks).
func (l *brokerLoop) inSet(k topicPartition) bool {
	_, ok := l.inReqSet[k]
	return ok
}

// sessionDone updates the session after a response to a request of kind
// l.kind. It returns false when the response is a session error to which
// nothing else in it applies (the request is made again, in full).
func (l *brokerLoop) sessionDone(resp *sarama.FetchResponse) bool {
	if l.kind == reqSessionless {
		return true
	}
	switch sarama.KError(resp.ErrorCode) {
	case sarama.ErrNoError:
	case sarama.ErrFetchSessionIDNotFound:
		l.f.stats.sessionErrors.Add(1)
		l.f.log.Debug("fetch session not found; opening a new one", "broker", l.id, "session", l.sess.id)
		l.sess.reset(false)
		return false
	case errFetchSessionTopicID:
		l.f.stats.sessionErrors.Add(1)
		l.f.log.Debug("fetch session refused a request naming topics otherwise than the session; opening a new one", "broker", l.id, "session", l.sess.id)
		l.sess.reset(false)
		return false
	case sarama.ErrInvalidFetchSessionEpoch:
		l.f.stats.sessionErrors.Add(1)
		l.f.log.Debug("fetch session epoch refused; opening a new session", "broker", l.id, "session", l.sess.id, "epoch", l.sess.epoch)
		l.sess.reset(true)
		return false
	default:
		return true // the caller handles it
	}
	if l.kind == reqFull {
		l.sess.id = resp.SessionID
		if resp.SessionID == 0 {
			l.sess.reset(false) // no session granted: full again
			return true
		}
		l.sess.epoch = 1
		l.sess.withIDs = l.reqIDs != nil
		l.sess.parts = make(map[topicPartition]sessPart, len(l.inReq))
		for i := range l.inReq {
			rp := &l.inReq[i]
			l.sess.parts[topicPartition{rp.p.topic, rp.p.partition}] = rp.part()
		}
		l.sess.peak = shrink.Peak{}
		l.sess.peak.Note(len(l.sess.parts))
		return true
	}
	if resp.SessionID != l.sess.id {
		// The broker dropped the session and answered without one: the
		// blocks hold, the session does not.
		l.sess.reset(false)
		return true
	}
	l.sess.epoch = nextEpoch(l.sess.epoch)
	for _, k := range l.forgot {
		delete(l.sess.parts, k)
	}
	for _, i := range l.sent {
		rp := &l.inReq[i]
		l.sess.parts[topicPartition{rp.p.topic, rp.p.partition}] = rp.part()
	}
	l.sess.peak.Note(len(l.sess.parts))
	l.sess.parts = shrink.Map(l.sess.parts, &l.sess.peak)
	return true
}

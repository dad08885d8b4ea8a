package fetch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/IBM/sarama"
)

// rawRecords is one partition's records as a fetch response brought them,
// taken out of the response before sarama decodes it (see tap).
type rawRecords struct {
	topic     string
	partition int32
	raw       []byte
}

var errShortResponse = errors.New("fetch response ends early")

// rewriteFetch takes the records out of a fetch response of version v
// (Fetch v4 to v13). frame is the response after its size: correlation id,
// header tags from v12, body:
//
//	throttle_time_ms int32, error_code int16 and session_id int32 (v7+),
//	[topic: name string (v13: topic_id uuid), [partition: index int32, error_code int16,
//	high_watermark int64, last_stable_offset int64, log_start_offset int64
//	(v5+), aborted_transactions nullable [producer_id int64, first_offset
//	int64], preferred_read_replica int32 (v11+), records nullable bytes]]
//
// with compact arrays, strings and bytes and tagged fields after each
// structure from v12 (the diverging epoch is a partition's tag). It appends
// to out the frame with its size, each partition's records of v2 record
// batches replaced by empty ones (sarama then decodes only the rest), and
// returns those records, in response order; a partition whose records hold
// a legacy message set (magic 0 or 1) keeps them, for sarama's decoder.
// A v13 response (ids: the request's topic ids) comes out as v12, each
// topic id replaced by its name, for sarama, which asked for v12. Without
// take, records are left in place. It returns a nil frame when the
// response is to be read as it came (nothing taken out, no topic id, no
// topic named twice).
//
// A topic named more than once comes out once, with all its partitions, at
// the place of its first entry: a broker answering in a fetch session
// lists partitions in its session's order, which moves each partition that
// returned records to the end, and starts a new topic entry wherever the
// topic changes, so that a topic of a long-lived session is split over
// many entries. sarama keeps only a topic's last entry (it makes
// FetchResponse.Blocks[topic] anew for each), and the partitions of the
// others would go without their records until a response that lists them
// in their topic's last entry.
func rewriteFetch(frame []byte, v int16, ids *topicIDs, take bool, out []byte) ([]byte, []rawRecords, error) {
	flex := v >= 12
	r := wireReader{b: frame, flex: flex}
	r.skip(4) // correlation id
	if flex {
		r.tags()
	}
	r.skip(4) // throttle
	if v >= 7 {
		r.skip(6)
	}
	head := r.i
	var topics []respTopic
	var parts []respPart
	var byName map[string]int // topic name to index in topics, from a second entry on
	var shares []rawRecords
	entries := r.array()
	for range entries {
		var name string
		if v >= fetchVersionWithTopicID {
			if !r.need(16) {
				break
			}
			var ok bool
			if name, ok = ids.byID[sarama.Uuid(r.b[r.i:r.i+16])]; !ok {
				return nil, nil, fmt.Errorf("fetch response names topic id %x, not asked for", r.b[r.i:r.i+16])
			}
			r.i += 16
		} else {
			name = r.str()
		}
		t := len(topics)
		switch {
		case t == 0:
			topics = append(topics, respTopic{name: name, first: -1, last: -1})
		case byName == nil && topics[0].name == name:
			t = 0
		default:
			if byName == nil {
				byName = map[string]int{topics[0].name: 0}
			}
			if at, ok := byName[name]; ok {
				t = at
			} else {
				byName[name] = t
				topics = append(topics, respTopic{name: name, first: -1, last: -1})
			}
		}
		for range r.array() {
			p := respPart{start: r.i, next: -1}
			part := int32(r.int32())
			r.skip(2 + 8 + 8) // error, high watermark, last stable offset
			if v >= 5 {
				r.skip(8)
			}
			for range r.array() { // aborted transactions
				r.skip(16)
				if flex {
					r.tags()
				}
			}
			if v >= 11 {
				r.skip(4)
			}
			p.rec = r.i
			raw := r.nullableBytes()
			p.recEnd = r.i
			if take && r.err == nil && len(raw) > 0 && allV2(raw) {
				p.take = true
				shares = append(shares, rawRecords{topic: name, partition: part, raw: raw})
			}
			if flex {
				r.tags()
			}
			p.end = r.i
			topics[t].add(parts, len(parts))
			parts = append(parts, p)
		}
		tagsAt := r.i
		if flex {
			r.tags()
		}
		if topics[t].tags == [2]int{} {
			topics[t].tags = [2]int{tagsAt, r.i}
		}
	}
	tail := r.i
	if flex {
		r.tags()
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	if len(shares) == 0 && ids == nil && len(topics) == entries {
		return nil, nil, nil
	}
	start := len(out)
	out = append(out, 0, 0, 0, 0)
	out = append(out, frame[:head]...)
	out = appendArrayLen(out, flex, len(topics))
	for _, t := range topics {
		if flex {
			out = binary.AppendUvarint(out, uint64(len(t.name)+1))
		} else {
			out = binary.BigEndian.AppendUint16(out, uint16(len(t.name)))
		}
		out = append(out, t.name...)
		out = appendArrayLen(out, flex, t.n)
		for i := t.first; i >= 0; i = parts[i].next {
			p := parts[i]
			if !p.take {
				out = append(out, frame[p.start:p.end]...)
				continue
			}
			out = append(out, frame[p.start:p.rec]...)
			if flex {
				out = append(out, 1) // compact bytes of length 0
			} else {
				out = append(out, 0, 0, 0, 0)
			}
			out = append(out, frame[p.recEnd:p.end]...)
		}
		out = append(out, frame[t.tags[0]:t.tags[1]]...)
	}
	out = append(out, frame[tail:]...)
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start-4))
	return out, shares, nil
}

// respTopic is a topic of a fetch response as rewriteFetch merges its
// entries: its partitions (a list through respPart.next) and the tagged
// fields of its first entry (frame offsets; v12 and later).
type respTopic struct {
	name        string
	first, last int // indexes of its first and last partition; -1: none
	n           int
	tags        [2]int
}

// add appends partition i (not yet in parts) to t's list.
func (t *respTopic) add(parts []respPart, i int) {
	if t.last >= 0 {
		parts[t.last].next = i
	} else {
		t.first = i
	}
	t.last = i
	t.n++
}

// respPart is a partition of a fetch response (frame offsets): its bytes
// are [start, end), its records field [rec, recEnd), replaced by an empty
// one when take.
type respPart struct {
	start, rec, recEnd, end int
	take                    bool
	next                    int // the next partition of its topic; -1: none
}

// appendArrayLen appends an array's length: a compact one (n+1, unsigned
// varint) when flex, else an int32.
func appendArrayLen(b []byte, flex bool, n int) []byte {
	if flex {
		return binary.AppendUvarint(b, uint64(n+1))
	}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// allV2 reports whether every batch of raw that says its magic is a v2
// record batch.
func allV2(raw []byte) bool {
	for len(raw) > 0 {
		size, magic := batchAt(raw)
		if magic >= 0 && magic != 2 {
			return false
		}
		if size == 0 {
			return true // the start of a batch
		}
		raw = raw[size:]
	}
	return true
}

// wireReader reads a response's fields; the first overrun sets err and
// makes every later read a no-op.
type wireReader struct {
	b    []byte
	i    int
	flex bool
	err  error
}

func (r *wireReader) need(n int) bool {
	if r.err != nil || n < 0 || n > len(r.b)-r.i {
		r.err = errShortResponse
		return false
	}
	return true
}

func (r *wireReader) skip(n int) {
	if r.need(n) {
		r.i += n
	}
}

func (r *wireReader) int32() uint32 {
	if !r.need(4) {
		return 0
	}
	r.i += 4
	return binary.BigEndian.Uint32(r.b[r.i-4:])
}

func (r *wireReader) int16() int {
	if !r.need(2) {
		return 0
	}
	r.i += 2
	return int(int16(binary.BigEndian.Uint16(r.b[r.i-2:])))
}

func (r *wireReader) uvarint() int {
	if r.err != nil {
		return 0
	}
	u, n := binary.Uvarint(r.b[r.i:])
	if n <= 0 || u > 1<<31 {
		r.err = errShortResponse
		return 0
	}
	r.i += n
	return int(u)
}

// array returns an array's length (0 for a null one).
func (r *wireReader) array() int {
	n := 0
	if r.flex {
		n = r.uvarint() - 1
	} else {
		n = int(int32(r.int32()))
	}
	if n > len(r.b)-r.i { // each element takes a byte at least
		r.err = errShortResponse
	}
	if r.err != nil {
		return 0
	}
	return max(n, 0)
}

func (r *wireReader) str() string {
	n := 0
	if r.flex {
		n = r.uvarint() - 1
	} else {
		n = r.int16()
	}
	if n <= 0 || !r.need(n) {
		return ""
	}
	r.i += n
	return string(r.b[r.i-n : r.i])
}

func (r *wireReader) nullableBytes() []byte {
	n := 0
	if r.flex {
		n = r.uvarint() - 1
	} else {
		n = int(int32(r.int32()))
	}
	if n <= 0 || !r.need(n) {
		return nil
	}
	r.i += n
	return r.b[r.i-n : r.i : r.i]
}

// tags skips a tagged fields section.
func (r *wireReader) tags() {
	for range r.uvarint() {
		r.uvarint() // tag
		r.skip(r.uvarint())
	}
}

package fetch

import (
	"encoding/binary"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// Record is one record of a Records, as the iterator yields it. Its fields
// are those of sarama's ConsumerMessage (Topic and Partition are the
// Records'): Key, Value and Headers are the response's own memory (no
// copy; Headers a slice made per record that has any), Timestamp is the record's (the batch's max timestamp under
// LogAppendTime). BlockTimestamp is the timestamp of the batch the record
// came in: a record batch's max timestamp (sarama leaves it zero there),
// the wrapper's timestamp of a legacy (v0/v1) compressed message set, or
// a legacy uncompressed message's own timestamp (zero for v0), as sarama
// sets it.
type Record struct {
	Offset         int64
	Key, Value     []byte
	Headers        []*sarama.RecordHeader
	Timestamp      time.Time
	BlockTimestamp time.Time
}

// Records is one partition's share of one fetch response, handed over
// whole by Partition.Take or Poll: the records at or after the offset that
// was fetched, in offset order (not necessarily contiguous: compaction,
// control records and aborted transactions leave gaps), without control
// records and, under ReadCommitted, without records of aborted
// transactions. It holds at least one record, except when it only moves
// the position: the broker's log had nothing to yield from the fetched
// offset to NextOffset (control batches such as a transaction's commit
// marker, aborted transactions, empty batches), and the consumer may
// count those offsets as passed (commit up to NextOffset).
//
// Memory: the Records and the memory its records point into (the record
// batches, and through them the response's buffer) belong
// to the caller once taken; the fetcher keeps no reference. A record's
// Key, Value and Headers stay valid as long as the caller keeps them: they
// keep that memory alive (a whole response buffer for uncompressed
// batches, as with sarama's Consumer). A Records is not safe for
// concurrent use while iterated; iterating it again yields the same
// records.
type Records struct {
	Topic     string
	Partition int32
	// HighWaterMark, LastStableOffset and LogStartOffset are the broker's
	// as of the response.
	HighWaterMark, LastStableOffset, LogStartOffset int64
	// NextOffset is where fetching continues: after the last record, or
	// after the control or aborted batches that followed it.
	NextOffset int64

	n    int
	segs []Segment
}

// Segment is a run of a Records' records: those from index from of a
// record batch the fetcher read itself (Batch), batch.Records[from:] of
// one sarama decoded, or the messages from index from of a legacy message
// block.
type Segment struct {
	wire   *Batch
	batch  *sarama.RecordBatch
	legacy *sarama.MessageBlock
	from   int
	pos    int // of a wire segment: where record from starts in its batch
}

// Len returns how many records the iterator yields.
func (r *Records) Len() int { return r.n }

// Segments returns the runs the records come in, in offset order: a
// reader that makes values of its own of every record walks a record
// batch's records itself (Segment.RecordBatch), with no call per record,
// and yields the rest (Segment.All). The slice is the Records' own: read
// it, do not change it.
func (r *Records) Segments() []Segment { return r.segs }

// Cursor returns a cursor over the segment's records when they are of a
// record batch the fetcher read itself (ok false otherwise).
func (s *Segment) Cursor() (c Cursor, ok bool) {
	if s.wire == nil {
		return Cursor{}, false
	}
	return s.wire.cursorAt(s.from, s.pos), true
}

// BlockTimestamp is the BlockTimestamp of the segment's records.
func (s *Segment) BlockTimestamp() time.Time {
	switch {
	case s.wire != nil:
		return s.wire.MaxTimestamp
	case s.batch != nil:
		return s.batch.MaxTimestamp
	}
	return s.legacy.Msg.Timestamp
}

// RecordBatch returns the segment's record batch as sarama decoded it and
// the index of its first record to yield (b.Records[from:], in offset
// order; a record's offset is b.FirstOffset plus its OffsetDelta, its
// timestamp RecordTime's), or nil for the other kinds.
func (s *Segment) RecordBatch() (b *sarama.RecordBatch, from int) { return s.batch, s.from }

// RecordTime is the timestamp of a record x of record batch b, as All
// yields it: the batch's max timestamp under LogAppendTime, otherwise its
// first timestamp plus the record's delta.
func RecordTime(b *sarama.RecordBatch, x *sarama.Record) time.Time {
	if b.LogAppendTime {
		return b.MaxTimestamp
	}
	return b.FirstTimestamp.Add(x.TimestampDelta)
}

// All yields the records in offset order. The *Record is reused between
// yields: copy what you keep (the fields themselves, slices included, may
// be kept). Cost per record: one call of yield, no allocation.
func (r *Records) All() iter.Seq[*Record] {
	return func(yield func(*Record) bool) {
		var rec Record
		for i := range r.segs {
			if !r.segs[i].each(&rec, yield) {
				return
			}
		}
	}
}

// All yields the segment's records in offset order, as Records.All does.
func (s *Segment) All() iter.Seq[*Record] {
	return func(yield func(*Record) bool) {
		var rec Record
		s.each(&rec, yield)
	}
}

// each yields the segment's records in *rec; false when yield said stop.
func (s *Segment) each(rec *Record, yield func(*Record) bool) bool {
	if s.wire != nil {
		rec.BlockTimestamp = s.wire.MaxTimestamp
		for c := s.wire.cursorAt(s.from, s.pos); c.Next(); {
			rec.Offset, rec.Key, rec.Value, rec.Headers, rec.Timestamp = c.Offset, c.Key, c.Value, c.Headers, c.Timestamp
			if !yield(rec) {
				return false
			}
		}
		return true
	}
	if b := s.batch; b != nil {
		rec.BlockTimestamp = b.MaxTimestamp
		for _, x := range b.Records[s.from:] {
			rec.Offset = b.FirstOffset + x.OffsetDelta
			rec.Key, rec.Value, rec.Headers = x.Key, x.Value, x.Headers
			rec.Timestamp = RecordTime(b, x)
			if !yield(rec) {
				return false
			}
		}
		return true
	}
	outer := s.legacy
	inner := outer.Messages()
	base := legacyBase(outer, inner)
	rec.Headers = nil
	rec.BlockTimestamp = outer.Msg.Timestamp
	for _, m := range inner[s.from:] {
		rec.Offset = m.Offset + base
		rec.Key, rec.Value = m.Msg.Key, m.Msg.Value
		rec.Timestamp = m.Msg.Timestamp
		if m.Msg.Version >= 1 && m.Msg.LogAppendTime {
			rec.Timestamp = outer.Msg.Timestamp
		}
		if !yield(rec) {
			return false
		}
	}
	return true
}

// legacyBase is what turns the offsets of a legacy message block's inner
// messages into absolute ones: v1 wrappers carry relative inner offsets
// and the absolute offset of the last inner message.
func legacyBase(outer *sarama.MessageBlock, inner []*sarama.MessageBlock) int64 {
	if outer.Msg.Version >= 1 && outer.Msg.Set != nil && len(inner) > 0 {
		return outer.Offset - inner[len(inner)-1].Offset
	}
	return 0
}

// parsed is what the broker loop learns from a partition's response block.
type parsed struct {
	recs *Records // nil when no record is to be handed over
	next int64    // the offset to fetch next
	// partial: nothing whole came, only the start of a batch larger than
	// what was asked for.
	partial bool
	// epoch is the partition leader epoch of the batch that ends at next
	// (-1: unknown, a legacy message set), when next moved.
	epoch int32
}

// parseBlock walks a partition's response block fetched at offset from:
// batches wholly before from are skipped, as are the records before from
// in the first batch (a compressed batch is returned whole), control
// batches, and under read_committed the transactional batches of aborted
// transactions (by producer id, from each aborted transaction's first
// offset up to its abort marker). Nothing is copied: the Records refer to
// the decoded batches. raw, when not nil, is the block's records as the
// response brought them (taken out before sarama decoded it: the block
// has none), read by the fetcher itself (parseRaw).
func parseBlock(topic string, partition int32, block *sarama.FetchResponseBlock, raw []byte, from int64, committed bool) (parsed, error) {
	if raw != nil {
		return parseRaw(topic, partition, block, raw, from, committed)
	}
	w := newBlockWalk(topic, partition, block, from, committed)
	whole := false // a whole batch or message came
	for _, rs := range block.RecordsSet {
		if b := rs.RecordBatch; b != nil {
			if b.PartialTrailingRecord {
				break
			}
			whole = true
			last := b.LastOffset()
			if last < w.out.next {
				continue
			}
			if !w.dropped(last, b.ProducerID, b.Control, b.IsTransactional, func() bool { return isAbortMarker(b) }) {
				i := 0
				for i < len(b.Records) && b.FirstOffset+b.Records[i].OffsetDelta < w.out.next {
					i++
				}
				if i < len(b.Records) {
					w.add(Segment{batch: b, from: i}, len(b.Records)-i)
				}
			}
			w.out.next = last + 1
			w.out.epoch = b.PartitionLeaderEpoch
			continue
		}
		ms := rs.MsgSet
		if ms == nil {
			continue
		}
		for _, outer := range ms.Messages {
			whole = true
			inner := outer.Messages()
			base := legacyBase(outer, inner)
			i := 0
			for i < len(inner) && inner[i].Offset+base < w.out.next {
				i++
			}
			if i < len(inner) {
				w.add(Segment{legacy: outer, from: i}, len(inner)-i)
				w.out.next = inner[len(inner)-1].Offset + base + 1
				w.out.epoch = -1
			}
		}
		if ms.PartialTrailingMessage {
			break
		}
	}
	return w.done(!whole && (block.Partial || len(block.RecordsSet) > 0)), nil
}

// parseRaw is parseBlock over raw record batches (v2), each read only if
// it reaches from; a batch that cannot be read is an error (the fetch of
// the partition is reported and made again), never skipped. Unlike
// sarama's decoder it keeps empty batches (compaction leaves them): the
// position moves past them.
func parseRaw(topic string, partition int32, block *sarama.FetchResponseBlock, raw []byte, from int64, committed bool) (parsed, error) {
	w := newBlockWalk(topic, partition, block, from, committed)
	whole := false
	for len(raw) > 0 {
		size, _ := batchAt(raw)
		if size == 0 {
			break // the start of a batch larger than the partition's share
		}
		whole = true
		at := raw[:size]
		raw = raw[size:]
		if len(at) >= batchHeaderSize && batchLast(at) < w.out.next {
			continue // wholly before the position: not read
		}
		b, err := readBatch(at)
		if err != nil {
			return w.out, fmt.Errorf("%s/%d: record batch at offset %d: %w", topic, partition, batchFirst(at), err)
		}
		last := b.LastOffset()
		if !w.dropped(last, b.ProducerID, b.control(), b.transactional(), func() bool { return isAbortKey(b.firstKey()) }) {
			if k, pos := b.fromIndex(w.out.next); k < b.count {
				w.add(Segment{wire: b, from: k, pos: pos}, b.count-k)
			}
		}
		w.out.next = last + 1
		w.out.epoch = b.LeaderEpoch
	}
	return w.done(!whole), nil
}

// blockWalk gathers what parseBlock and parseRaw make of a block.
type blockWalk struct {
	topic     string
	partition int32
	block     *sarama.FetchResponseBlock
	out       parsed
	recs      *Records
	// Under read_committed: the aborted transactions not reached yet, by
	// first offset, and the producers whose aborted transaction is open.
	aborted []*sarama.AbortedTransaction
	active  map[int64]struct{}
}

func newBlockWalk(topic string, partition int32, block *sarama.FetchResponseBlock, from int64, committed bool) *blockWalk {
	w := &blockWalk{topic: topic, partition: partition, block: block, out: parsed{next: from, epoch: -1}}
	if committed && len(block.AbortedTransactions) > 0 {
		w.aborted = slices.Clone(block.AbortedTransactions)
		slices.SortFunc(w.aborted, func(a, b *sarama.AbortedTransaction) int {
			switch {
			case a.FirstOffset < b.FirstOffset:
				return -1
			case a.FirstOffset > b.FirstOffset:
				return 1
			}
			return 0
		})
		w.active = make(map[int64]struct{}, len(w.aborted))
	}
	return w
}

// dropped reports whether the records of a batch ending at last are not
// handed over: a control batch (an abort marker ends its producer's
// aborted transaction), or under read_committed a transactional batch of
// an aborted transaction.
func (w *blockWalk) dropped(last, producer int64, control, transactional bool, abortMarker func() bool) bool {
	for len(w.aborted) > 0 && w.aborted[0].FirstOffset <= last {
		w.active[w.aborted[0].ProducerID] = struct{}{}
		w.aborted = w.aborted[1:]
	}
	switch {
	case control:
		if w.active != nil && abortMarker() {
			delete(w.active, producer)
		}
		return true
	case w.active != nil && transactional && hasKey(w.active, producer):
		return true
	}
	return false
}

func (w *blockWalk) add(s Segment, n int) {
	if w.recs == nil {
		w.recs = &Records{
			Topic: w.topic, Partition: w.partition,
			HighWaterMark: w.block.HighWaterMarkOffset, LastStableOffset: w.block.LastStableOffset,
			LogStartOffset: w.block.LogStartOffset,
			segs:           make([]Segment, 0, max(len(w.block.RecordsSet), 1)),
		}
	}
	w.recs.segs = append(w.recs.segs, s)
	w.recs.n += n
}

func (w *blockWalk) done(partial bool) parsed {
	if w.recs != nil {
		w.recs.NextOffset = w.out.next
	}
	w.out.recs = w.recs
	w.out.partial = partial
	return w.out
}

func hasKey(m map[int64]struct{}, k int64) bool {
	_, ok := m[k]
	return ok
}

// isAbortMarker reports whether a control batch holds an abort marker: its
// record's key is version (int16) and type (int16, 0 = abort).
func isAbortMarker(b *sarama.RecordBatch) bool {
	if len(b.Records) == 0 {
		return false
	}
	return isAbortKey(b.Records[0].Key)
}

// isAbortKey reports whether a control record's key is an abort marker's.
func isAbortKey(key []byte) bool {
	return len(key) >= 4 && binary.BigEndian.Uint16(key[2:4]) == uint16(sarama.ControlRecordAbort)
}

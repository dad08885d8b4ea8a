package fetch

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// batch returns a record batch of offsets first..last (every offset a
// record) of producer pid.
func batch(first, last int64, pid int64, txn bool) *sarama.Records {
	b := &sarama.RecordBatch{FirstOffset: first, LastOffsetDelta: int32(last - first), ProducerID: pid, IsTransactional: txn,
		FirstTimestamp: time.Unix(100, 0), MaxTimestamp: time.Unix(100, 0).Add(time.Duration(last) * time.Millisecond)}
	for o := first; o <= last; o++ {
		b.Records = append(b.Records, &sarama.Record{OffsetDelta: o - first, Value: fmt.Appendf(nil, "v%d", o), TimestampDelta: time.Duration(o) * time.Millisecond})
	}
	return &sarama.Records{RecordBatch: b}
}

// marker returns a control batch at offset with an abort or commit marker
// of producer pid.
func marker(offset int64, pid int64, abort bool) *sarama.Records {
	key := make([]byte, 4)
	typ := uint16(sarama.ControlRecordCommit)
	if abort {
		typ = uint16(sarama.ControlRecordAbort)
	}
	binary.BigEndian.PutUint16(key[2:], typ)
	b := &sarama.RecordBatch{FirstOffset: offset, ProducerID: pid, IsTransactional: true, Control: true,
		Records: []*sarama.Record{{Key: key, Value: make([]byte, 6)}}}
	return &sarama.Records{RecordBatch: b}
}

func offsets(r *Records) []int64 {
	if r == nil {
		return nil
	}
	var out []int64
	for rec := range r.All() {
		out = append(out, rec.Offset)
		if want := fmt.Sprintf("v%d", rec.Offset); string(rec.Value) != want {
			panic("value " + string(rec.Value) + " at " + want)
		}
	}
	return out
}

// TestParseTransactions: producer 1's first transaction (0-2) aborts,
// producer 2's (3-4) commits, producer 1's second (6-7) commits; markers
// at 5, 8, 9. read_committed drops 0-2 (from the aborted list up to the
// abort marker) and never yields markers; read_uncommitted yields every
// data record. Both continue at 10.
func TestParseTransactions(t *testing.T) {
	block := &sarama.FetchResponseBlock{
		HighWaterMarkOffset: 10, LastStableOffset: 10,
		AbortedTransactions: []*sarama.AbortedTransaction{{ProducerID: 1, FirstOffset: 0}},
		RecordsSet: []*sarama.Records{batch(0, 2, 1, true), batch(3, 4, 2, true), marker(5, 1, true),
			batch(6, 7, 1, true), marker(8, 1, false), marker(9, 2, false)},
	}
	for _, tc := range []struct {
		committed bool
		want      []int64
	}{{true, []int64{3, 4, 6, 7}}, {false, []int64{0, 1, 2, 3, 4, 6, 7}}} {
		out := parseBoth(t, block, 0, tc.committed)
		if got := offsets(out.recs); !slices.Equal(got, tc.want) || out.recs.Len() != len(tc.want) {
			t.Errorf("committed=%v: %v (Len %d), want %v", tc.committed, got, out.recs.Len(), tc.want)
		}
		if out.next != 10 || out.recs.NextOffset != 10 || out.partial {
			t.Errorf("committed=%v: next %d/%d, partial %v", tc.committed, out.next, out.recs.NextOffset, out.partial)
		}
	}
	// Only markers and aborted batches: nothing to hand over, but moved on.
	block.RecordsSet = []*sarama.Records{batch(0, 2, 1, true), marker(5, 1, true)}
	if out := parseBoth(t, block, 0, true); out.recs != nil || out.next != 6 {
		t.Errorf("aborted only: %v, next %d", offsets(out.recs), out.next)
	}
}

// TestParseFromMidBatch: a batch is returned whole; records before the
// fetch offset are not yielded, and batches wholly before it are skipped.
// Timestamps are the batch's first plus the record's delta; the block
// timestamp is the batch's max timestamp.
func TestParseFromMidBatch(t *testing.T) {
	block := &sarama.FetchResponseBlock{HighWaterMarkOffset: 30, RecordsSet: []*sarama.Records{batch(0, 9, 0, false), batch(10, 19, 0, false), batch(20, 24, 0, false)}}
	out := parseBoth(t, block, 15, false)
	want := []int64{15, 16, 17, 18, 19, 20, 21, 22, 23, 24}
	if got := offsets(out.recs); !slices.Equal(got, want) || out.next != 25 {
		t.Fatalf("%v next %d, want %v next 25", got, out.next, want)
	}
	for rec := range out.recs.All() {
		if want := time.Unix(100, 0).Add(time.Duration(rec.Offset) * time.Millisecond); !rec.Timestamp.Equal(want) {
			t.Fatalf("offset %d: timestamp %v, want %v", rec.Offset, rec.Timestamp, want)
		}
		last := rec.Offset/10*10 + 9 // the last offset of its batch
		if want := time.Unix(100, 0).Add(time.Duration(min(last, 24)) * time.Millisecond); !rec.BlockTimestamp.Equal(want) {
			t.Fatalf("offset %d: block timestamp %v, want %v", rec.Offset, rec.BlockTimestamp, want)
		}
	}
	// Stopping the iteration early works, and iterating again yields all.
	n := 0
	for range out.recs.All() {
		n++
		if n == 3 {
			break
		}
	}
	if got := offsets(out.recs); len(got) != 10 {
		t.Fatalf("second iteration: %v", got)
	}
}

// TestParsePartial: a block holding only the start of a batch is partial
// (the partition's size must grow); a whole batch followed by a partial
// one is not; grow doubles up to the limit and then refuses.
func TestParsePartial(t *testing.T) {
	part := &sarama.Records{RecordBatch: &sarama.RecordBatch{FirstOffset: 5, PartialTrailingRecord: true}}
	out := parseBoth(t, &sarama.FetchResponseBlock{HighWaterMarkOffset: 9, RecordsSet: []*sarama.Records{part}}, 5, false)
	if !out.partial || out.recs != nil || out.next != 5 {
		t.Fatalf("only partial: %+v", out)
	}
	if out := parseBoth(t, &sarama.FetchResponseBlock{Partial: true, RecordsSet: []*sarama.Records{}}, 5, false); !out.partial {
		t.Fatal("block.Partial: not partial")
	}
	out = parseBoth(t, &sarama.FetchResponseBlock{HighWaterMarkOffset: 9, RecordsSet: []*sarama.Records{batch(5, 6, 0, false), part}}, 5, false)
	if out.partial || out.next != 7 || !slices.Equal(offsets(out.recs), []int64{5, 6}) {
		t.Fatalf("whole then partial: %+v %v", out, offsets(out.recs))
	}
	if out := parseBoth(t, &sarama.FetchResponseBlock{HighWaterMarkOffset: 9}, 5, false); out.partial || out.recs != nil || out.next != 5 {
		t.Fatalf("empty: %+v", out)
	}
	p := &Partition{size: 1000}
	for _, want := range []int32{2000, 3000} {
		if !p.grow(3000) || p.size != want {
			t.Fatalf("grow: size %d, want %d", p.size, want)
		}
	}
	if p.grow(3000) {
		t.Fatal("grow beyond the limit")
	}
	p.size = 1 << 30
	if !p.grow(0) || p.size != 1<<31-1 {
		t.Fatalf("grow without limit: %d", p.size)
	}
}

// TestParseLegacy: a v1 compressed message set carries relative inner
// offsets and the absolute offset of its last message; BlockTimestamp is
// the wrapper's.
func TestParseLegacy(t *testing.T) {
	wrapTS := time.Unix(200, 0)
	var inner []*sarama.MessageBlock
	for i := range int64(3) {
		inner = append(inner, &sarama.MessageBlock{Offset: i, Msg: &sarama.Message{Version: 1, Value: fmt.Appendf(nil, "v%d", 10+i), Timestamp: time.Unix(150, 0)}})
	}
	outer := &sarama.MessageBlock{Offset: 12, Msg: &sarama.Message{Version: 1, Codec: sarama.CompressionGZIP, Timestamp: wrapTS, Set: &sarama.MessageSet{Messages: inner}}}
	plain := &sarama.MessageBlock{Offset: 13, Msg: &sarama.Message{Version: 1, Value: []byte("v13"), Timestamp: time.Unix(160, 0)}}
	block := &sarama.FetchResponseBlock{HighWaterMarkOffset: 14, RecordsSet: []*sarama.Records{{MsgSet: &sarama.MessageSet{Messages: []*sarama.MessageBlock{outer, plain}}}}}
	out := parseBoth(t, block, 11, false)
	if got := offsets(out.recs); !slices.Equal(got, []int64{11, 12, 13}) || out.next != 14 {
		t.Fatalf("%v next %d", got, out.next)
	}
	for rec := range out.recs.All() {
		if !rec.BlockTimestamp.Equal(wrapTS) || !rec.Timestamp.Equal(time.Unix(150, 0)) {
			t.Fatalf("offset %d: timestamps %v %v", rec.Offset, rec.Timestamp, rec.BlockTimestamp)
		}
		break
	}
}

package partition

import (
	"context"
	"errors"
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/partlink"
	"github.com/zkgroup/zkgroup/offsets"
)

// fakeOwner records what its batches and messages asked of it.
type fakeOwner struct {
	acks, abandons []int64
	batchAcks      []int64 // the offsets AckBatch was called with
	ackedFrom      []int   // *acked as AckBatch found it
}

func (o *fakeOwner) Ack(offset int64) AckResult { o.acks = append(o.acks, offset); return AckOK }
func (o *fakeOwner) AckBatch(msgs []*Message, acked *int, offset int64) AckResult {
	o.batchAcks, o.ackedFrom = append(o.batchAcks, offset), append(o.ackedFrom, *acked)
	for *acked < len(msgs) && msgs[*acked].Offset <= offset {
		*acked++
	}
	return AckOK
}
func (o *fakeOwner) Abandon(offset int64) { o.abandons = append(o.abandons, offset) }
func (o *fakeOwner) Generation() uint64   { return 9 }
func (o *fakeOwner) FencingToken() int64  { return 77 }

// TestLinkBatch: the registered Link makes a batch of the given messages
// (pointers into them, each pointing back), whose acks, abandons and
// generation, and its messages', go to its owner with the right offsets;
// the batch's acked count goes through AckBatch.
func TestLinkBatch(t *testing.T) {
	link := partlink.Get[Message, Batch, Stream, AckResult]()
	msgs := []Message{{Offset: 4}, {Offset: 5}, {Offset: 7}}
	o := &fakeOwner{}
	var b Batch
	link.InitBatch(&b, "t", 2, msgs, o)
	if b.Topic != "t" || b.Partition != 2 || b.Len() != 3 || b.FirstOffset() != 4 || b.LastOffset() != 7 || b.Generation() != 9 {
		t.Fatalf("batch %s/%d of %d, %d..%d, generation %d", b.Topic, b.Partition, b.Len(), b.FirstOffset(), b.LastOffset(), b.Generation())
	}
	for i := range msgs {
		if b.Messages[i] != &msgs[i] || msgs[i].batch != &b {
			t.Fatalf("message %d not linked", i)
		}
	}
	if r := msgs[1].Ack(); r != AckOK || !slices.Equal(o.acks, []int64{5}) {
		t.Errorf("Message.Ack: %v, owner acked %v", r, o.acks)
	}
	if msgs[2].Generation() != 9 {
		t.Error("Message.Generation is not the owner's")
	}
	if msgs[2].FencingToken() != 77 || b.FencingToken() != 77 {
		t.Errorf("FencingToken: message %d, batch %d; want the owner's 77", msgs[2].FencingToken(), b.FencingToken())
	}
	msgs[0].Abandon()
	b.AckUpTo(5)
	b.Ack()
	b.Abandon()
	if !slices.Equal(o.batchAcks, []int64{5, 7}) || !slices.Equal(o.ackedFrom, []int{0, 2}) || b.acked != 3 {
		t.Errorf("AckBatch calls %v from %v, acked %d; want [5 7] from [0 2], 3", o.batchAcks, o.ackedFrom, b.acked)
	}
	if !slices.Equal(o.abandons, []int64{4, 4, 5, 7}) {
		t.Errorf("abandoned %v", o.abandons)
	}
}

// TestHandBuilt: a message or batch not handed out by a consumer (or nil,
// or empty) acks nothing and says so.
func TestHandBuilt(t *testing.T) {
	var nilMsg *Message
	m := &Message{Offset: 1}
	b := &Batch{Messages: []*Message{m}}
	var nilBatch *Batch
	for what, r := range map[string]AckResult{"nil message": nilMsg.Ack(), "message": m.Ack(), "batch": b.Ack(),
		"batch up to": b.AckUpTo(1), "nil batch": nilBatch.Ack(), "empty batch": (&Batch{}).Ack()} {
		if r != AckInvalid {
			t.Errorf("%s: %v, want invalid", what, r)
		}
	}
	m.Abandon()
	b.Abandon()
	nilMsg.Abandon()
	if m.Generation() != 0 || b.Generation() != 0 || nilMsg.Generation() != 0 {
		t.Error("a generation for a hand-built value")
	}
}

// fakeSource records the calls a Stream passes on.
type fakeSource struct{ calls []string }

func (s *fakeSource) Each(context.Context) iter.Seq2[*Message, error] {
	s.calls = append(s.calls, "each")
	return func(yield func(*Message, error) bool) { yield(&Message{Offset: 3}, nil) }
}
func (s *fakeSource) Poll(context.Context) (*Batch, error) {
	s.calls = append(s.calls, "poll")
	return nil, errors.New("polled")
}
func (s *fakeSource) Commit(context.Context) error { s.calls = append(s.calls, "commit"); return nil }
func (s *fakeSource) Seek(_ context.Context, off int64) error {
	s.calls = append(s.calls, "seek")
	if off != 11 {
		return errors.New("wrong offset")
	}
	return nil
}
func (s *fakeSource) SeekTime(_ context.Context, at time.Time) error {
	s.calls = append(s.calls, "seektime")
	if !at.Equal(time.Unix(5, 0)) {
		return errors.New("wrong time")
	}
	return nil
}
func (s *fakeSource) Pause(context.Context) error { s.calls = append(s.calls, "pause"); return nil }
func (s *fakeSource) Resume()                     { s.calls = append(s.calls, "resume") }

// TestLinkStream: a Stream made by the Link names its ownership and passes
// every call on to its source.
func TestLinkStream(t *testing.T) {
	src := &fakeSource{}
	s := partlink.Get[Message, Batch, Stream, AckResult]().NewStream("t", 4, 8, src)
	if s.Topic() != "t" || s.Partition() != 4 || s.Generation() != 8 || s.TopicPartition() != (offsets.TopicPartition{Topic: "t", Partition: 4}) {
		t.Fatalf("stream %s/%d generation %d", s.Topic(), s.Partition(), s.Generation())
	}
	ctx := context.Background()
	var got []int64
	for m, err := range s.Each(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Offset)
	}
	if _, err := s.Poll(ctx); err == nil || err.Error() != "polled" {
		t.Errorf("Poll: %v", err)
	}
	if err := errors.Join(s.Commit(ctx), s.Seek(ctx, 11), s.SeekTime(ctx, time.Unix(5, 0)), s.Pause(ctx)); err != nil {
		t.Error(err)
	}
	s.Resume()
	if want := []string{"each", "poll", "commit", "seek", "seektime", "pause", "resume"}; !slices.Equal(src.calls, want) || !slices.Equal(got, []int64{3}) {
		t.Errorf("calls %v, yielded %v; want %v, [3]", src.calls, got, want)
	}
}

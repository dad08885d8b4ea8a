package pipeline

import (
	"context"
	"errors"
	"github.com/zkgroup/zkgroup/manager"
	"iter"
	"runtime"
	"sync"
	"testing"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
)

// stream hands out its batches: whole (Poll) or one message at a time
// (Each).
type stream struct {
	topic string
	part  int32
	ch    chan *manager.Batch
}

func (s *stream) Topic() string    { return s.topic }
func (s *stream) Partition() int32 { return s.part }
func (s *stream) Each(context.Context) iter.Seq2[*manager.Message, error] {
	return func(yield func(*manager.Message, error) bool) {
		for b := range s.ch {
			for _, m := range b.Messages {
				if !yield(m, nil) {
					return
				}
			}
		}
	}
}

func (s *stream) Poll(ctx context.Context) (*manager.Batch, error) {
	select {
	case b, ok := <-s.ch:
		if !ok {
			return nil, manager.ErrClosed
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// newStream returns a closed stream of one batch per offsets list.
func newStream(p int32, offsets ...int64) *stream {
	return newBatches(p, offsets)
}

// newBatches returns a closed stream of one batch per offsets list.
func newBatches(p int32, batches ...[]int64) *stream {
	s := &stream{topic: "t", part: p, ch: make(chan *manager.Batch, len(batches))}
	for _, offs := range batches {
		s.ch <- batch(p, offs...)
	}
	close(s.ch)
	return s
}

func batch(p int32, offsets ...int64) *manager.Batch {
	b := &manager.Batch{Topic: "t", Partition: p}
	for _, o := range offsets {
		b.Messages = append(b.Messages, &manager.Message{Topic: "t", Partition: p, Offset: o})
	}
	return b
}

// recorder handles messages, failing those in fail, and records order.
type recorder struct {
	mu      sync.Mutex
	handled map[int32][]int64
	acked   map[int32][]int64
	fail    map[int64]bool
	gate    chan struct{} // when set, Handle of partition 0 waits on it
}

func (r *recorder) Handle(_ context.Context, m *manager.Message) (sink.Outcome, error) {
	if r.gate != nil && m.Partition == 0 {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handled[m.Partition] = append(r.handled[m.Partition], m.Offset)
	if r.fail[m.Offset] {
		return 0, sink.ErrStop
	}
	return sink.Delivered, nil
}

func (r *recorder) ack(m *manager.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acked[m.Partition] = append(r.acked[m.Partition], m.Offset)
}

func newRecorder() *recorder {
	return &recorder{handled: map[int32][]int64{}, acked: map[int32][]int64{}, fail: map[int64]bool{}}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOrderAndAck(t *testing.T) {
	r := newRecorder()
	p := New(Config{Handler: r, Ack: r.ack})
	streams := make(chan *stream, 3)
	for i := int32(0); i < 3; i++ {
		streams <- newStream(i, 0, 1, 2, 3, 4)
	}
	close(streams)
	_ = Run(context.Background(), p, seqOf(streams))
	for i := int32(0); i < 3; i++ {
		if want := []int64{0, 1, 2, 3, 4}; !equal(r.handled[i], want) || !equal(r.acked[i], want) {
			t.Errorf("partition %d: handled %v acked %v", i, r.handled[i], r.acked[i])
		}
	}
}

func TestFatalStopsPartition(t *testing.T) {
	r := newRecorder()
	r.fail[2] = true
	var fatals []error
	var mu sync.Mutex
	p := New(Config{Handler: r, Ack: r.ack, Fatal: func(err error) { mu.Lock(); fatals = append(fatals, err); mu.Unlock() }})
	streams := make(chan *stream, 2)
	streams <- newStream(0, 0, 1, 2, 3, 4)
	streams <- newStream(1, 0, 1, 2, 3)
	close(streams)
	_ = Run(context.Background(), p, seqOf(streams))
	if !equal(r.acked[0], []int64{0, 1}) || !equal(r.handled[0], []int64{0, 1, 2}) {
		t.Errorf("partition 0: handled %v acked %v", r.handled[0], r.acked[0])
	}
	if len(fatals) != 1 || !errors.Is(fatals[0], sink.ErrStop) {
		t.Errorf("fatal called %d times: %v", len(fatals), fatals)
	}
}

// TestSamePartitionSequential: a new stream of a partition waits for the
// previous worker of that partition, never overlapping it.
func TestSamePartitionSequential(t *testing.T) {
	r := newRecorder()
	r.gate = make(chan struct{})
	p := New(Config{Handler: r, Ack: r.ack})
	p.Start(context.Background(), newStream(0, 10, 11))
	p.Start(context.Background(), newStream(0, 5, 6)) // a later ownership, re-delivering
	p.Start(context.Background(), newStream(1, 1))
	// Partition 1 is independent of partition 0's blocked worker.
	for {
		r.mu.Lock()
		n := len(r.acked[1])
		r.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	close(r.gate)
	p.Wait()
	if want := []int64{10, 11, 5, 6}; !equal(r.handled[0], want) {
		t.Fatalf("handled %v, want %v", r.handled[0], want)
	}
}

// seqOf yields the streams sent on ch until it is closed.
func seqOf[S any](ch <-chan S) iter.Seq2[S, error] {
	return func(yield func(S, error) bool) {
		for s := range ch {
			if !yield(s, nil) {
				return
			}
		}
	}
}

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
)

// batchRecorder is a BatchHandler that records the batches it is handed,
// the acks and the abandons. fail[o] makes a batch holding offset o fail
// there (with ErrStop); stale makes every ack stale.
type batchRecorder struct {
	lim       sink.BatchLimits
	fail      map[int64]bool
	stale     bool
	mu        sync.Mutex
	handled   [][]int64
	at        []time.Time // when each batch was handed over
	acks      []string    // "first offset of the consumer's batch:offset acked up to"
	abandoned []int64
	notify    chan struct{} // when set, gets a value per batch handed over
}

func (r *batchRecorder) Handle(context.Context, *manager.Message) (sink.Outcome, error) {
	panic("a batch handler is handed batches only")
}

func (r *batchRecorder) HandleBatch(_ context.Context, msgs []*manager.Message) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var offs []int64
	for _, m := range msgs {
		offs = append(offs, m.Offset)
	}
	r.handled = append(r.handled, offs)
	r.at = append(r.at, time.Now())
	if r.notify != nil {
		r.notify <- struct{}{}
	}
	for i, o := range offs {
		if r.fail[o] {
			return i, fmt.Errorf("%w: offset %d", sink.ErrStop, o)
		}
	}
	return len(msgs), nil
}

func (r *batchRecorder) BatchLimits() (sink.BatchLimits, bool) { return r.lim, true }

func (r *batchRecorder) ackUpTo(b *manager.Batch, offset int64) manager.AckResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks = append(r.acks, fmt.Sprintf("%d:%d", b.FirstOffset(), offset))
	if r.stale {
		return manager.AckStale
	}
	return manager.AckOK
}

func (r *batchRecorder) abandon(m *manager.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.abandoned = append(r.abandoned, m.Offset)
}

func (r *batchRecorder) pipeline(fatal func(error)) *Pipeline {
	return New(Config{Handler: r, AckUpTo: r.ackUpTo, Abandon: r.abandon, Fatal: fatal,
		Ack: func(*manager.Message) { panic("a batch is acked up to an offset") }})
}

func offsets(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

func check(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

func TestBatches(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lim         sink.BatchLimits
		batches     [][]int64
		wantHandled [][]int64
		wantAcks    []string
	}{
		{"as taken", sink.BatchLimits{}, [][]int64{offsets(0, 10), {10, 12}},
			[][]int64{offsets(0, 10), {10, 12}}, []string{"0:9", "10:12"}},
		{"max messages", sink.BatchLimits{MaxMessages: 4}, [][]int64{offsets(0, 10), {10, 12}},
			[][]int64{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}, {10, 12}}, []string{"0:3", "0:7", "0:9", "10:12"}},
		{"linger joins what is taken", sink.BatchLimits{MaxMessages: 5, Linger: time.Hour}, [][]int64{{0, 1}, {2, 3}, {4, 5}, {6}},
			[][]int64{{0, 1, 2, 3, 4}, {5, 6}}, []string{"0:1", "2:3", "4:4", "4:5", "6:6"}},
		{"linger ends with the stream", sink.BatchLimits{Linger: time.Hour}, [][]int64{{0, 1}, {2}},
			[][]int64{{0, 1, 2}}, []string{"0:1", "2:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &batchRecorder{lim: tc.lim}
			p := r.pipeline(nil)
			p.Start(context.Background(), newBatches(0, tc.batches...))
			p.Wait()
			check(t, "handled", r.handled, tc.wantHandled)
			check(t, "acks", r.acks, tc.wantAcks)
			check(t, "abandoned", r.abandoned, []int64(nil))
		})
	}
}

// TestBatchMaxBytes: a batch holds at most MaxBytes of keys and values,
// but for a message that exceeds it alone.
func TestBatchMaxBytes(t *testing.T) {
	b := batch(0, offsets(0, 6)...)
	for i, n := range []int{40, 40, 30, 100, 10, 10} {
		b.Messages[i].Value = make([]byte, n)
	}
	s := &stream{topic: "t", ch: make(chan *manager.Batch, 1)}
	s.ch <- b
	close(s.ch)
	r := &batchRecorder{lim: sink.BatchLimits{MaxBytes: 100}}
	p := r.pipeline(nil)
	p.Start(context.Background(), s)
	p.Wait()
	check(t, "handled", r.handled, [][]int64{{0, 1}, {2}, {3}, {4, 5}})
}

// TestBatchLinger: a batch under its limits waits Linger for more, then
// goes as it is while the stream is still open.
func TestBatchLinger(t *testing.T) {
	const linger = 50 * time.Millisecond
	r := &batchRecorder{lim: sink.BatchLimits{MaxMessages: 10, Linger: linger}, notify: make(chan struct{}, 2)}
	s := &stream{topic: "t", ch: make(chan *manager.Batch, 2)}
	p := r.pipeline(nil)
	p.Start(context.Background(), s)
	start := time.Now()
	s.ch <- batch(0, 0, 1)
	<-r.notify // the first batch went without the second
	s.ch <- batch(0, 2)
	close(s.ch)
	p.Wait()
	check(t, "handled", r.handled, [][]int64{{0, 1}, {2}})
	if waited := r.at[0].Sub(start); waited < linger {
		t.Errorf("the first batch went after %v, before the linger of %v", waited, linger)
	}
}

// TestBatchFatal: a batch failing for good at a message acks those before
// it, abandons it, the rest of the batch and what was taken after, and
// stops the worker and the daemon.
func TestBatchFatal(t *testing.T) {
	r := &batchRecorder{lim: sink.BatchLimits{MaxMessages: 4}, fail: map[int64]bool{5: true}}
	var fatals []error
	var mu sync.Mutex
	p := r.pipeline(func(err error) { mu.Lock(); fatals = append(fatals, err); mu.Unlock() })
	p.Start(context.Background(), newBatches(0, offsets(0, 10), offsets(10, 12)))
	p.Wait()
	p.Start(context.Background(), newBatches(1, []int64{100})) // other partitions go on
	p.Wait()
	slices.Sort(r.abandoned)
	check(t, "handled", r.handled[:2], [][]int64{{0, 1, 2, 3}, {4, 5, 6, 7}})
	if len(r.handled) != 3 || !slices.Equal(r.handled[2], []int64{100}) {
		t.Errorf("handled %v: partition 1 not handled, or partition 0 after its failure", r.handled)
	}
	check(t, "acks", r.acks[:2], []string{"0:3", "0:4"})
	check(t, "abandoned", r.abandoned, []int64{5, 6, 7, 8, 9})
	if len(fatals) != 1 || !errors.Is(fatals[0], sink.ErrStop) {
		t.Errorf("fatal called %d times: %v", len(fatals), fatals)
	}
}

// TestBatchCanceledNotFatal: a batch failing because ctx ended (the daemon
// stopping) is abandoned without calling Fatal.
func TestBatchCanceledNotFatal(t *testing.T) {
	r := &batchRecorder{fail: map[int64]bool{0: true}}
	p := r.pipeline(func(err error) { t.Errorf("fatal %v", err) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.Start(ctx, newBatches(0, offsets(0, 3)))
	p.Wait()
	check(t, "abandoned", r.abandoned, []int64{0, 1, 2})
}

// TestBatchStaleAck: once an ack says the ownership ended, the worker
// delivers nothing more of the stream.
func TestBatchStaleAck(t *testing.T) {
	r := &batchRecorder{lim: sink.BatchLimits{MaxMessages: 2}, stale: true}
	p := r.pipeline(nil)
	p.Start(context.Background(), newBatches(0, offsets(0, 5), offsets(5, 8)))
	p.Wait()
	check(t, "handled", r.handled, [][]int64{{0, 1}})
	check(t, "abandoned", r.abandoned, offsets(2, 8))
}

// TestBatchHurry: once the pipeline hurries (the daemon stops), a
// lingering batch goes at once, and later ones linger no more.
func TestBatchHurry(t *testing.T) {
	r := &batchRecorder{lim: sink.BatchLimits{MaxMessages: 10, Linger: time.Hour}, notify: make(chan struct{}, 2)}
	s := &stream{topic: "t", ch: make(chan *manager.Batch, 2)}
	p := r.pipeline(nil)
	p.Start(context.Background(), s)
	s.ch <- batch(0, 0, 1)
	p.Hurry()
	<-r.notify // delivered while the stream is open and the hour not over
	s.ch <- batch(0, 2)
	<-r.notify
	close(s.ch)
	p.Wait()
	check(t, "handled", r.handled, [][]int64{{0, 1}, {2}})
}

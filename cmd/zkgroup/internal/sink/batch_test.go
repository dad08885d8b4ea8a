package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/manager"
)

// batcher is a BatchSink that records every DeliverBatch call's offsets;
// a batch holding a poison offset fails with poisonErr, and the first
// fails calls fail with err.
type batcher struct {
	mu        sync.Mutex
	calls     [][]int64
	poison    map[int64]bool
	poisonErr error
	fails     int
	err       error
}

func (b *batcher) Deliver(context.Context, *manager.Message) error {
	panic("a BatchSink is handed batches only")
}

func (b *batcher) DeliverBatch(_ context.Context, msgs []*manager.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var offs []int64
	for _, m := range msgs {
		offs = append(offs, m.Offset)
	}
	b.calls = append(b.calls, offs)
	if len(b.calls) <= b.fails {
		return b.err
	}
	for _, o := range offs {
		if b.poison[o] {
			return fmt.Errorf("offset %d: %w", o, b.poisonErr)
		}
	}
	return nil
}

func (b *batcher) BatchLimits() BatchLimits { return BatchLimits{MaxMessages: 100} }
func (b *batcher) Close() error             { return nil }

func batchOf(offsets ...int64) []*manager.Message {
	var out []*manager.Message
	for _, o := range offsets {
		out = append(out, &manager.Message{Topic: "t", Partition: 1, Offset: o, Value: []byte("v")})
	}
	return out
}

func TestHandleBatch(t *testing.T) {
	boom := errors.New("boom")
	base := Policy{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond}
	one := func(offs ...int64) [][]int64 { // the calls of a fallback: one batch of one per offset
		var out [][]int64
		for _, o := range offs {
			out = append(out, []int64{o})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		sink      *batcher
		policy    string
		wantN     int
		wantErr   error
		wantCalls [][]int64
		wantDL    []int64
		wantStats Stats
	}{
		{name: "whole", sink: &batcher{}, policy: PolicyStop, wantN: 4,
			wantCalls: [][]int64{{0, 1, 2, 3}}, wantStats: Stats{Delivered: 4, Batches: 1}},
		{name: "transient failure retried whole", sink: &batcher{fails: 2, err: boom}, policy: PolicyStop, wantN: 4,
			wantCalls: [][]int64{{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}}, wantStats: Stats{Delivered: 4, Batches: 1, Errors: 2, Retries: 2}},
		{name: "permanent poison skipped alone", sink: &batcher{poison: map[int64]bool{2: true}, poisonErr: Permanent(boom)}, policy: PolicySkip, wantN: 4,
			wantCalls: append([][]int64{{0, 1, 2, 3}}, one(0, 1, 2, 3)...),
			wantStats: Stats{Delivered: 3, Skipped: 1, BatchFallbacks: 1, Errors: 2}},
		{name: "permanent poison dead-lettered alone", sink: &batcher{poison: map[int64]bool{1: true, 3: true}, poisonErr: Permanent(boom)}, policy: PolicyDeadLetter, wantN: 4,
			wantCalls: append([][]int64{{0, 1, 2, 3}}, one(0, 1, 2, 3)...), wantDL: []int64{1, 3},
			wantStats: Stats{Delivered: 2, DeadLettered: 2, BatchFallbacks: 1, Errors: 3}},
		{name: "permanent poison stops at it", sink: &batcher{poison: map[int64]bool{2: true}, poisonErr: Permanent(boom)}, policy: PolicyStop, wantN: 2, wantErr: ErrStop,
			wantCalls: append([][]int64{{0, 1, 2, 3}}, one(0, 1, 2)...),
			wantStats: Stats{Delivered: 2, Failed: 1, BatchFallbacks: 1, Errors: 2}},
		{name: "transient poison falls back after the last attempt", sink: &batcher{poison: map[int64]bool{3: true}, poisonErr: boom}, policy: PolicySkip, wantN: 4,
			wantCalls: append([][]int64{{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}}, one(0, 1, 2, 3, 3, 3)...),
			wantStats: Stats{Delivered: 3, Skipped: 1, BatchFallbacks: 1, Errors: 6, Retries: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.OnFailure = tc.policy
			dl := &fakeDL{}
			if tc.policy == PolicyDeadLetter {
				p.DeadLetter = dl
			}
			h, _ := newTestHandler(t, tc.sink, p)
			if l, ok := h.BatchLimits(); !ok || l.MaxMessages != 100 {
				t.Fatalf("BatchLimits = %+v, %v", l, ok)
			}
			n, err := h.HandleBatch(context.Background(), batchOf(0, 1, 2, 3))
			if n != tc.wantN || !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("HandleBatch = %d, %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
			if !slices.EqualFunc(tc.sink.calls, tc.wantCalls, slices.Equal) {
				t.Errorf("calls %v, want %v", tc.sink.calls, tc.wantCalls)
			}
			if !slices.Equal(dl.got, tc.wantDL) {
				t.Errorf("dead-lettered %v, want %v", dl.got, tc.wantDL)
			}
			if st := h.Stats(); st != tc.wantStats {
				t.Errorf("stats %+v, want %+v", st, tc.wantStats)
			}
		})
	}
	t.Run("batch of one", func(t *testing.T) {
		p := base
		p.OnFailure = PolicySkip
		s := &batcher{poison: map[int64]bool{7: true}, poisonErr: boom}
		h, waits := newTestHandler(t, s, p)
		if n, err := h.HandleBatch(context.Background(), batchOf(7)); n != 1 || err != nil {
			t.Fatalf("%d %v", n, err)
		}
		if want := one(7, 7, 7); !slices.EqualFunc(s.calls, want, slices.Equal) {
			t.Errorf("calls %v, want %v (attempted once per attempt, no fallback)", s.calls, want)
		}
		checkWaits(t, *waits, 10*time.Millisecond, 20*time.Millisecond)
		if st := h.Stats(); st.Skipped != 1 || st.BatchFallbacks != 0 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		p := base
		p.OnFailure = PolicySkip
		s := &batcher{fails: 10, err: boom}
		h, _ := newTestHandler(t, s, p)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if n, err := h.HandleBatch(ctx, batchOf(0, 1)); n != 0 || !errors.Is(err, context.Canceled) {
			t.Fatalf("%d %v (a canceled batch must not be skipped)", n, err)
		}
		if len(s.calls) != 1 || h.Stats().Skipped != 0 {
			t.Fatalf("calls %v, stats %+v", s.calls, h.Stats())
		}
	})
	t.Run("plain sink", func(t *testing.T) {
		p := base
		p.OnFailure = PolicyStop
		f := &flaky{fails: 1, seen: map[int64]int{}, err: boom}
		h, _ := newTestHandler(t, f, p)
		if _, ok := h.BatchLimits(); ok {
			t.Fatal("a plain sink has batch limits")
		}
		if n, err := h.HandleBatch(context.Background(), batchOf(0, 1, 2)); n != 3 || err != nil {
			t.Fatalf("%d %v", n, err)
		}
		if len(f.seen) != 3 || f.seen[1] != 2 {
			t.Fatalf("seen %v", f.seen)
		}
	})
}

// writes records each Write call.
type writes struct {
	mu    sync.Mutex
	calls [][]byte
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, bytes.Clone(p))
	return len(p), nil
}

// TestStdoutBatch: each batch is one Write of its lines, as
// EncodeJSONLine writes them, whatever the concurrency; a message that
// cannot be encoded fails its batch for good and nothing is written.
func TestStdoutBatch(t *testing.T) {
	w := &writes{}
	s := NewStdout(w)
	if l := s.BatchLimits(); l.MaxBytes != StdoutMaxBytes || l.MaxMessages != 0 || l.Linger != 0 {
		t.Fatalf("limits %+v", l)
	}
	var wg sync.WaitGroup
	batches := map[string][]byte{}
	for p := range int32(8) {
		var msgs []*manager.Message
		var want []byte
		for o := range int64(50) {
			m := msg(bytes.Repeat([]byte{'a' + byte(p)}, int(o)*10))
			m.Partition, m.Offset = p, o
			msgs = append(msgs, m)
			line, err := EncodeJSONLine(m)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, line...)
		}
		batches[string(want)] = want
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if err := s.DeliverBatch(context.Background(), msgs); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if len(w.calls) != 40 {
		t.Fatalf("%d writes, want 40", len(w.calls))
	}
	for _, c := range w.calls {
		if _, ok := batches[string(c)]; !ok {
			t.Fatalf("a write is not one batch's lines: %.200q", c)
		}
	}

	bad := batchOf(0, 1, 2)
	bad[1].Timestamp = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	err := s.DeliverBatch(context.Background(), bad)
	if !errors.Is(err, ErrPermanent) || !bytes.Contains([]byte(err.Error()), []byte("t/1@1")) || len(w.calls) != 40 {
		t.Fatalf("DeliverBatch = %v after %d writes", err, len(w.calls))
	}
}

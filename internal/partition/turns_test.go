package partition

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"go.uber.org/goleak"
)

// turnsGroup is n managers of partitions 0..n-1 of feeds sharing one
// batch channel (the merged stream's) and Turns of k, each stepped as the
// consumer manager steps them. g0 is the goroutines before they started.
type turnsGroup struct {
	out   chan *Handout
	turns *Turns
	ms    []*Manager
	steps []*stepper
	g0    int
}

func newTurnsGroup(t *testing.T, feeds *fakeFetcher, n, k int) *turnsGroup {
	t.Helper()
	turns, err := NewTurns(k)
	if err != nil {
		t.Fatal(err)
	}
	g := &turnsGroup{out: make(chan *Handout), turns: turns}
	fence := newFence()
	store := &memStore{committed: map[int32]int64{}}
	for p := range n {
		store.committed[int32(p)] = 0
	}
	cfg := NewConfig()
	committer := committerFor(t, store, cfg)
	g.g0 = runtime.NumGoroutine()
	for p := range n {
		m, err := New(Params{Topic: "t", Partition: int32(p), Client: noResolver{}, Fetcher: feeds,
			Store: store, Committer: committer, Fence: fence, Batches: g.out, Turns: turns, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		g.ms = append(g.ms, m)
		g.steps = append(g.steps, stepOn(m))
	}
	return g
}

// settled waits until every manager has either a turn (blocked on the
// channel nobody reads) or waits for one: k of them and n-k.
func (g *turnsGroup) settled(t *testing.T, waiting int) {
	t.Helper()
	testcluster.Await(t, 10*time.Second, time.Millisecond, "every partition holding or waiting for a turn", func() bool {
		return int(g.turns.live.Load()) == waiting
	})
}

// free returns the turns not held.
func (g *turnsGroup) free() int {
	g.turns.mu.Lock()
	defer g.turns.mu.Unlock()
	return g.turns.free
}

func TestNewTurnsRefusesZero(t *testing.T) {
	if _, err := NewTurns(0); err == nil {
		t.Fatal("NewTurns(0): no error")
	}
}

// TestTurnsBoundTheSessions: a hundred partitions with records to hand out
// and nobody taking them hold three goroutines (the turns), not a hundred;
// then every message comes exactly once, in order per partition, and
// turns go round: every partition hands out its first batch before any
// hands out its third.
func TestTurnsBoundTheSessions(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const n, per, k = 100, 1000, 3 // 4 shares of up to 256 per partition
	g := newTurnsGroup(t, feedsOf(n, per), n, k)
	g.settled(t, n-k)
	testcluster.Await(t, 10*time.Second, time.Millisecond, "the queued steps' goroutines ended", func() bool {
		return runtime.NumGoroutine()-g.g0 <= k
	})
	next := make([]int64, n)
	batches := make([]int, n)
	for got := 0; got < n*per; {
		b := receive(t, g.out, "batch")
		p := b.Messages[0].Partition
		batches[p]++
		if batches[p] == 3 {
			for q, c := range batches {
				if c == 0 {
					t.Fatalf("partition %d handed out its third batch before partition %d its first", p, q)
				}
			}
		}
		for _, msg := range b.Messages {
			if msg.Offset != next[p] {
				t.Fatalf("partition %d: offset %d, want %d", p, msg.Offset, next[p])
			}
			next[p]++
			if r := msg.Ack(); r != AckOK {
				t.Fatalf("ack %d/%d: %v", p, msg.Offset, r)
			}
		}
		got += b.Len()
	}
	g.settled(t, 0)
	testcluster.Await(t, 10*time.Second, time.Millisecond, "every turn given back", func() bool { return g.free() == k })
	for _, m := range g.ms {
		stopPromptly(t, m, "of an idle partition")
	}
}

// TestTurnsLetHaltsAndControlsThrough: a partition waiting for a turn
// (nobody takes the batches of those holding them) pauses, seeks and
// stops at once: the request resumes it without a turn.
func TestTurnsLetHaltsAndControlsThrough(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const n, k = 6, 2
	g := newTurnsGroup(t, feedsOf(n, 600), n, k)
	g.settled(t, n-k)
	var waiting []*Manager
	for _, m := range g.ms {
		if m.state.Load() == runWaiting {
			waiting = append(waiting, m)
		}
	}
	if len(waiting) != n-k {
		t.Fatalf("%d managers wait for a turn, want %d", len(waiting), n-k)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := waiting[0].Pause(ctx); err != nil {
		t.Fatalf("Pause of a partition waiting for a turn: %v", err)
	}
	if err := waiting[1].Seek(ctx, 100); err != nil {
		t.Fatalf("Seek of a partition waiting for a turn: %v", err)
	}
	for _, m := range waiting[2:] {
		stopPromptly(t, m, "of a partition waiting for a turn")
	}
	// The sought partition waits again; the paused one holds no turn.
	// Take batches until the sought one hands out from its new position.
	for {
		b := receive(t, g.out, "batch")
		for _, msg := range b.Messages {
			msg.Ack()
		}
		if b.Messages[0].Partition == waiting[1].Partition() {
			if b.Messages[0].Offset != 100 {
				t.Fatalf("the sought partition handed out from %d, want 100", b.Messages[0].Offset)
			}
			break
		}
	}
	waiting[0].Resume()
	taken := make(chan struct{})
	go func() { // take what the others still hand out
		defer close(taken)
		for b := range g.out {
			for _, msg := range b.Messages {
				msg.Ack()
			}
		}
	}()
	for _, m := range g.ms {
		_ = m.Stop(false)
	}
	close(g.out)
	<-taken
	if free, live := g.free(), g.turns.live.Load(); free != k || live != 0 {
		t.Errorf("after every Stop: %d turns free, %d waiting; want %d, 0", free, live, k)
	}
}

package partition

import (
	"context"
	"fmt"
	"runtime"
	"slices"
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
// then every message comes exactly once, in order per partition. (The
// order of the turns is TestTurnsGoRound's: here the goroutines a turn
// resumes run when the scheduler has them run.)
func TestTurnsBoundTheSessions(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const n, per, k = 100, 1000, 3 // 4 shares of up to 256 per partition
	g := newTurnsGroup(t, feedsOf(n, per), n, k)
	g.settled(t, n-k)
	testcluster.Await(t, 10*time.Second, time.Millisecond, "the queued steps' goroutines ended", func() bool {
		return runtime.NumGoroutine()-g.g0 <= k
	})
	next := make([]int64, n)
	for got := 0; got < n*per; {
		b := receive(t, g.out, "batch")
		p := b.Messages[0].Partition
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
	g.turns.mu.Lock()
	room := cap(g.turns.q)
	g.turns.mu.Unlock()
	if room >= 64 {
		t.Errorf("the empty queue keeps room for %d runs after %d waited at once", room, n-k)
	}
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
	// A turn passed to a stopped partition comes back with its last step,
	// which may start after Stop returned (it returns the run's outcome).
	testcluster.Await(t, 10*time.Second, time.Millisecond, "every turn given back after every Stop", func() bool { return g.free() == k })
	if live := g.turns.live.Load(); live != 0 {
		t.Errorf("after every Stop: %d waiting, want 0", live)
	}
}

// TestTurnsGoRound follows Turns' bookkeeping step by step, without
// goroutines: turns go to waiting runs in the order they queued, a run
// that passes its turn on queues behind them, a run taken out of the
// queue (a halt) is skipped, and every turn comes back.
func TestTurnsGoRound(t *testing.T) {
	turns, err := NewTurns(2)
	if err != nil {
		t.Fatal(err)
	}
	var resumed []int
	ms := make([]*Manager, 6)
	for i := range ms {
		ms[i] = &Manager{}
		ms[i].resume = func() { resumed = append(resumed, i) }
	}
	want := func(step string, order ...int) {
		t.Helper()
		if fmt.Sprint(resumed) != fmt.Sprint(order) {
			t.Fatalf("%s: resumed %v, want %v", step, resumed, order)
		}
		resumed = nil
	}
	holds := func(step string, who ...int) {
		t.Helper()
		for i, m := range ms {
			if m.turn != slices.Contains(who, i) {
				t.Fatalf("%s: run %d holds a turn: %v", step, i, m.turn)
			}
		}
	}
	if !turns.take(ms[0]) || !turns.take(ms[1]) {
		t.Fatal("the first two takes got no turn")
	}
	if turns.take(ms[2]) || ms[2].state.Load() != runWaiting {
		t.Fatal("a third take got a turn, or did not queue")
	}
	ms[3].state.Store(runParked)
	turns.wakeParked(ms[3]) // records for a parked run: it queues
	if ms[3].state.Load() != runWaiting {
		t.Fatalf("a parked run woken with no turn free is in state %d, want waiting", ms[3].state.Load())
	}
	if turns.take(ms[4]) {
		t.Fatal("a take with runs waiting got a turn")
	}
	want("nobody gave a turn")
	holds("two taken", 0, 1)

	if !turns.pass(ms[0]) {
		t.Fatal("pass with runs waiting: false")
	}
	want("0 passed", 2)
	holds("0 passed", 1, 2)
	if !turns.cancel(ms[3]) { // a halt takes 3 out of the queue
		t.Fatal("cancel of a waiting run: false")
	}
	if turns.cancel(ms[3]) {
		t.Fatal("a second cancel: true")
	}
	turns.give(ms[1])
	want("1 gave", 4) // 3 is skipped
	holds("1 gave", 2, 4)
	turns.give(ms[2])
	want("2 gave", 0) // 0 queued behind the others when it passed
	if turns.pass(ms[4]) {
		t.Fatal("pass with nobody waiting: true")
	}
	turns.give(ms[4])
	turns.give(ms[0])
	want("the rest gave")
	holds("all given")
	if turns.free != 2 || turns.live.Load() != 0 {
		t.Fatalf("%d turns free, %d waiting; want 2, 0", turns.free, turns.live.Load())
	}

	ms[5].state.Store(runParked)
	turns.wakeParked(ms[5]) // a turn is free: it resumes with it
	want("5 woken", 5)
	holds("5 woken", 5)
	if ms[5].state.Load() != runActive {
		t.Fatalf("a woken run is in state %d, want active", ms[5].state.Load())
	}
	turns.give(ms[5])
}

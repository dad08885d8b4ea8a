package partition

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// runOn runs m.Run on a goroutine of the test, as the consumer manager
// runs it on the partition's slot goroutine; the channel receives what
// Run returned.
func runOn(m *Manager) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.Run() }()
	return done
}

// start is New, then Run on a goroutine of its own, which Stop ends and
// waits for (the consumer manager runs Run on its slot goroutine instead).
func start(p Params) (*Manager, error) {
	m, err := New(p)
	if err != nil {
		return nil, err
	}
	go func() { _ = m.Run() }()
	return m, nil
}

// TestManagerRunsOnTheCallersGoroutine: New starts no goroutine; Run runs
// the manager on the caller's and hands messages out; Halt makes Run
// return (Done closed) without a drain, which Stop then makes: the final
// commit covers what was acked.
func TestManagerRunsOnTheCallersGoroutine(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cfg := NewConfig()
	cfg.CommitInterval = time.Hour // only the final commit
	p, store, _ := fakedPartition(t, 10, cfg)
	out := make(chan *Handout)
	p.Batches = out
	before := goleak.IgnoreCurrent()
	m, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("New started a goroutine: %v", err)
	}
	done := runOn(m)
	ackAll(t, out, 10)
	select {
	case <-m.Done():
		t.Fatal("Done closed while running")
	default:
	}
	m.Halt()
	if err := receive(t, done, "return of Run after Halt"); err != nil {
		t.Errorf("Run after Halt: %v, want nil", err)
	}
	select {
	case <-m.Done():
	default:
		t.Error("Done open after Run returned")
	}
	if got := store.get(0); got != 5 {
		t.Errorf("committed %d before Stop, want 5 (the final commit is Stop's)", got)
	}
	if err := m.Stop(true); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := store.get(0); got != 15 {
		t.Errorf("committed %d after Stop, want 15", got)
	}
}

// TestManagerRunEndsWhenLost: Run returns ErrLost once the fence is lost.
func TestManagerRunEndsWhenLost(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	p, _, fence := fakedPartition(t, 10, NewConfig())
	out := make(chan *Handout)
	p.Batches = out
	m, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	done := runOn(m)
	receive(t, out, "batch") // running; the next offer waits for a reader
	fence.lose()
	if err := receive(t, done, "return of Run after the loss"); !errors.Is(err, ErrLost) {
		t.Errorf("Run after the loss: %v, want ErrLost", err)
	}
	_ = m.Stop(false)
}

// TestManagerStopOrHaltBeforeRun: a manager halted before it runs neither
// reads the committed offset nor fetches; one stopped before it runs
// closes its prefetched Fetch, and a later Run returns ErrStopped at
// once.
func TestManagerStopOrHaltBeforeRun(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	p, _, _ := fakedPartition(t, 10, NewConfig())
	p.Batches = make(chan *Handout)
	f := p.Fetcher.(*fakeFetcher)
	m, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	m.Halt()
	if err := receive(t, runOn(m), "return of a halted Run"); err != nil {
		t.Errorf("halted Run: %v, want nil", err)
	}
	if adds, _, _, _ := f.state(0); len(adds) != 0 {
		t.Errorf("a halted manager fetched: %v", adds)
	}
	_ = m.Stop(false)

	p, _, _ = fakedPartition(t, 10, NewConfig())
	p.Batches = make(chan *Handout)
	f = p.Fetcher.(*fakeFetcher)
	fp, err := f.Add("t", 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	p.Prefetched = &Prefetched{FP: fp, Offset: 5}
	if m, err = New(p); err != nil {
		t.Fatal(err)
	}
	_ = m.Stop(false)
	if n := f.openFetches(); n != 0 {
		t.Errorf("%d fetches open after Stop of a manager that never ran, want 0", n)
	}
	if err := receive(t, runOn(m), "return of Run after Stop"); !errors.Is(err, ErrStopped) {
		t.Errorf("Run after Stop: %v, want ErrStopped", err)
	}
}

// hangingStore is a memStore whose Fetch waits until its context ends,
// telling entered when it starts.
type hangingStore struct {
	*memStore
	entered chan struct{}
}

func (s hangingStore) Fetch(ctx context.Context, _ string, _ int32) (int64, bool, error) {
	s.entered <- struct{}{}
	<-ctx.Done()
	return 0, false, ctx.Err()
}

// TestManagerHaltCutsTheStartRead: a Halt while Run reads the committed
// offset ends the read at once (not at CommitTimeout, an hour here), and
// Run returns without fetching.
func TestManagerHaltCutsTheStartRead(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cfg := NewConfig()
	cfg.CommitTimeout = time.Hour
	p, store, _ := fakedPartition(t, 10, cfg)
	hs := hangingStore{memStore: store, entered: make(chan struct{}, 1)}
	p.Store, p.Batches = hs, make(chan *Handout)
	m, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	done := runOn(m)
	receive(t, hs.entered, "the read of the committed offset")
	m.Halt()
	if err := receive(t, done, "return of Run after the Halt"); err != nil {
		t.Errorf("Run after the Halt: %v, want nil", err)
	}
	if adds, _, _, _ := p.Fetcher.(*fakeFetcher).state(0); len(adds) != 0 {
		t.Errorf("fetched after the Halt: %v", adds)
	}
	_ = m.Stop(false)
}

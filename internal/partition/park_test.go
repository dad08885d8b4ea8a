package partition

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// stepper takes the steps of a manager's run as the consumer manager
// does: each on a goroutine of its own, the next started by resume. The
// outcome of the step that ended the run arrives on done; resumes counts
// the resumes.
type stepper struct {
	m       *Manager
	done    chan error
	mu      sync.Mutex
	resumes int
	parks   chan struct{} // a step returned parked (buffered; dropped when full)
}

func stepOn(m *Manager) *stepper {
	s := &stepper{m: m, done: make(chan error, 1), parks: make(chan struct{}, 1024)}
	go s.step()
	return s
}

func (s *stepper) step() {
	parked, err := s.m.Step(s.resume)
	if parked {
		select {
		case s.parks <- struct{}{}:
		default: // nobody counts them
		}
		return
	}
	s.done <- err
}

func (s *stepper) resume() {
	s.mu.Lock()
	s.resumes++
	s.mu.Unlock()
	go s.step()
}

func (s *stepper) resumed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumes
}

// ackAll receives batches from out until n messages came, acking each.
func ackAll(t *testing.T, out <-chan *Handout, n int) (last int64) {
	t.Helper()
	for got := 0; got < n; {
		b := receive(t, out, "batch")
		for _, msg := range b.Messages {
			if r := msg.Ack(); r != AckOK {
				t.Fatalf("ack %d: %v", msg.Offset, r)
			}
			last = msg.Offset
		}
		got += b.Len()
	}
	return last
}

// parkable returns a manager of n faked messages (offsets 5.. of a log
// committed at 5), not running, handing out batches on the returned
// channel (of capacity buf), with its store and fetcher.
func parkable(t *testing.T, n, buf int, cfg Config) (*Manager, *memStore, *fakeFetcher, chan *Handout) {
	t.Helper()
	p, store, _ := fakedPartition(t, n, cfg)
	out := make(chan *Handout, buf)
	p.Batches = out
	m, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	return m, store, p.Fetcher.(*fakeFetcher), out
}

// TestStepParksWhileIdle: a run with nothing to hand out parks (Step
// returns, no goroutine is left), and records, a control request and a
// halt each resume it once: it hands the new records out, applies the
// request, and ends.
func TestStepParksWhileIdle(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cfg := NewConfig()
	cfg.CommitInterval = time.Hour
	m, store, f, out := parkable(t, 10, 0, cfg)
	before := goleak.IgnoreCurrent()
	s := stepOn(m)
	if last := ackAll(t, out, 10); last != 14 {
		t.Fatalf("last offset %d, want 14", last)
	}
	receive(t, s.parks, "park after the records")
	if err := goleak.Find(before); err != nil {
		t.Errorf("a goroutine left while parked: %v", err)
	}
	if n := s.resumed(); n != 0 {
		t.Errorf("%d resumes before anything came, want 0", n)
	}

	f.produce(0, 0, 3, 3) // offsets 15..17
	if last := ackAll(t, out, 3); last != 17 {
		t.Fatalf("last offset %d, want 17", last)
	}
	receive(t, s.parks, "park after the new records")
	if n := s.resumed(); n != 1 {
		t.Errorf("%d resumes for one produce, want 1", n)
	}

	// A seek is a control request: the parked run applies it.
	sought := make(chan error, 1)
	go func() { sought <- m.Seek(context.Background(), 12) }()
	if last := ackAll(t, out, 6); last != 17 {
		t.Fatalf("after the seek: last offset %d, want 17", last)
	}
	if err := receive(t, sought, "the seek's return"); err != nil {
		t.Fatalf("Seek: %v", err)
	}
	receive(t, s.parks, "park after the seek")

	m.Halt()
	if err := receive(t, s.done, "the end of the run after Halt"); err != nil {
		t.Errorf("run after Halt: %v, want nil", err)
	}
	select {
	case <-m.Done():
	default:
		t.Error("Done open after the run ended")
	}
	if err := m.Stop(true); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := store.get(0); got != 18 {
		t.Errorf("committed %d, want 18", got)
	}
	if n := f.openFetches(); n != 0 {
		t.Errorf("%d fetches open after Stop, want 0", n)
	}
}

// TestStopEndsAParkedRun: Stop of a parked run, whose resume nobody acts
// on, ends the fetch session itself, drains and commits; the Step that
// the resume would have made returns the run's outcome, once.
func TestStopEndsAParkedRun(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m, store, f, out := parkable(t, 4, 0, NewConfig())
	resumes := make(chan struct{}, 4)
	parked := make(chan bool, 1)
	go func() {
		p, _ := m.Step(func() { resumes <- struct{}{} })
		parked <- p
	}()
	ackAll(t, out, 4)
	if !receive(t, parked, "the first step's return") {
		t.Fatal("the first step ended the run, want parked")
	}
	if err := m.Stop(true); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	receive(t, resumes, "the resume of Stop's halt")
	if n := f.openFetches(); n != 0 {
		t.Errorf("%d fetches open after Stop of a parked run, want 0", n)
	}
	if got := store.get(0); got != 9 {
		t.Errorf("committed %d, want 9", got)
	}
	if p, err := m.Step(nil); p || err != nil {
		t.Errorf("step after Stop ended the parked run: parked %v, %v; want false, nil", p, err)
	}
	if _, err := m.Step(nil); !errors.Is(err, ErrStopped) {
		t.Errorf("second step after Stop: %v, want ErrStopped", err)
	}
}

// TestStepResumesUnderConcurrentProduce: records arriving while the run
// parks, from another goroutine, are never left waiting (no wake-up is
// lost) and the run is never taken by two goroutines at once (the race
// detector and the order of the offsets): every offset comes once, in
// order.
func TestStepResumesUnderConcurrentProduce(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m, _, f, out := parkable(t, 1, 1, NewConfig())
	const rounds = 2000
	go func() {
		for i := range rounds {
			f.produce(0, 0, 1, 1) // offset 6+i
			if i%4 != 0 {         // mostly let the run catch up and park
				time.Sleep(time.Duration(i%3) * 20 * time.Microsecond)
			}
		}
	}()
	s := stepOn(m)
	next := int64(5)
	for next < 6+rounds {
		b := receive(t, out, "batch")
		for _, msg := range b.Messages {
			if msg.Offset != next {
				t.Fatalf("offset %d, want %d", msg.Offset, next)
			}
			msg.Ack()
			next++
		}
	}
	n := s.resumed()
	t.Logf("%d resumes for %d records", n, rounds)
	if n < rounds/10 {
		t.Errorf("%d resumes for %d records, want the run parked between them often (at least %d)", n, rounds, rounds/10)
	}
	m.Halt()
	if err := receive(t, s.done, "the end of the run"); err != nil {
		t.Errorf("run: %v", err)
	}
	if err := m.Stop(true); err != nil {
		t.Fatal(err)
	}
}

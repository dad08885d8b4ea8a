package partition

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/zkgroup/zkgroup/internal/shrink"
)

// Turns bounds how many Managers sharing one Batches channel (the merged
// stream) run their fetch sessions at once. Without it, every partition
// with records has a goroutine of its own blocked on the shared channel
// until the receiver takes its batch: after a catch-up, or at a steady
// rate over many partitions, a goroutine and a stack per partition, whose
// records the runtime keeps for good once allocated. With it, at most n
// sessions hold a turn (they fetch, track and hand out, or wait for the
// receiver); the others wait in a FIFO, parked like an idle partition
// (no goroutine), and get a turn as one is given back.
//
// A session gives its turn back whenever it would wait for anything but
// the receiver (MaxUnacked room, a suspended session, a stopped fetch,
// nothing to take) and when its run's step returns; after each share it
// hands out, it passes the turn on if others wait, and queues at the
// back. So a slow partition never holds a turn from the others, and only
// a receiver that takes nothing holds them all, as it would hold every
// sender without Turns. A halt or a control request resumes a waiting
// partition at once, without a turn (see park.go).
//
// Safe for concurrent use. Without Turns (Params.Turns nil) nothing is
// bounded.
type Turns struct {
	mu   sync.Mutex
	free int        // turns not held
	q    []*Manager // waiting (state waiting), and stale entries
	head int        // q[head:] is the queue
	// live counts the waiting Managers in q; read without mu by a
	// session after a share, to see if it should pass its turn on.
	live atomic.Int32
}

// NewTurns returns Turns of n (at least 1).
func NewTurns(n int) (*Turns, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: Turns: %d, want at least 1", ErrConfig, n)
	}
	return &Turns{free: n}, nil
}

// Run states of a Manager (Manager.state).
const (
	runActive  int32 = iota // a step runs, or is about to
	runParked               // parked: nothing to take (park.go)
	runWaiting              // waiting in Turns' queue for a turn
)

// take gives m a turn if one is free and nobody waits; otherwise queues
// m (m.state becomes runWaiting) and returns false. m's step only, m
// holding no turn.
func (t *Turns) take(m *Manager) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.free > 0 && t.live.Load() == 0 {
		t.free--
		m.turn = true
		return true
	}
	m.state.Store(runWaiting)
	t.pushLocked(m)
	return false
}

// wakeParked is fp's Notify for m parked: records (or an error) are
// there. m resumes with a turn if one is free and nobody waits, or
// queues (no goroutine). A no-op unless m is parked.
func (t *Turns) wakeParked(m *Manager) {
	if m.state.Load() != runParked {
		return
	}
	t.mu.Lock()
	if t.free > 0 && t.live.Load() == 0 {
		if !m.state.CompareAndSwap(runParked, runActive) {
			t.mu.Unlock()
			return
		}
		t.free--
		m.turn = true
		t.mu.Unlock()
		m.resume()
		return
	}
	if m.state.CompareAndSwap(runParked, runWaiting) {
		t.pushLocked(m)
	}
	t.mu.Unlock()
}

// pass gives m's turn to the first waiting Manager, if any, and queues m
// behind it (true); false (m keeps its turn) when none waits. m's step
// only, holding a turn.
func (t *Turns) pass(m *Manager) bool {
	t.mu.Lock()
	next := t.popLocked()
	if next == nil {
		t.mu.Unlock()
		return false
	}
	m.turn = false
	next.turn = true
	m.state.Store(runWaiting)
	t.pushLocked(m)
	t.mu.Unlock()
	next.resume()
	return true
}

// give gives m's turn back: to the first waiting Manager, which resumes
// with it, or to the free ones. m's step only.
func (t *Turns) give(m *Manager) {
	m.turn = false
	t.mu.Lock()
	next := t.popLocked()
	if next == nil {
		t.free++
		t.mu.Unlock()
		return
	}
	next.turn = true
	t.mu.Unlock()
	next.resume()
}

// cancel takes m out of the queue (true), unless whoever resumes it took
// it first (false: that one has called or will call m's resume).
func (t *Turns) cancel(m *Manager) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !m.state.CompareAndSwap(runWaiting, runActive) {
		return false
	}
	t.live.Add(-1) // its entry in q is stale now
	return true
}

// pushLocked queues m (state runWaiting). t.mu held.
func (t *Turns) pushLocked(m *Manager) {
	if t.head > 0 && 2*t.head >= len(t.q) {
		// Reuse the consumed front instead of growing.
		n := copy(t.q, t.q[t.head:])
		clear(t.q[n:])
		t.q, t.head = shrink.Slice(t.q[:n]), 0
	}
	t.q = append(t.q, m)
	t.live.Add(1)
}

// popLocked takes the first waiting Manager out of the queue (its state
// becomes runActive), dropping stale entries; nil when none waits. t.mu
// held.
func (t *Turns) popLocked() *Manager {
	for t.head < len(t.q) {
		m := t.q[t.head]
		t.q[t.head] = nil
		t.head++
		if m.state.CompareAndSwap(runWaiting, runActive) {
			t.live.Add(-1)
			return m
		}
	}
	// Empty: keep no room a crowd of waiting runs needed once.
	t.q, t.head = shrink.Slice(t.q[:0]), 0
	return nil
}

package partition

// A partition with nothing to hand out holds no goroutine: its run parks
// (Step returns parked) and whatever may give it work resumes it by
// calling Step's resume, which gets Step called again. The run's state
// between two steps is on the Manager (the fetch session fp and its next
// offset, the backoff), not on a goroutine's stack, so an idle owned
// partition costs its Manager and nothing more: no stack, no goroutine.
//
// A parked run waits in one place only: a fetch session with nothing to
// take, for one of three things, each of which calls unpark once it is
// there:
//   - fp's Ready (records, an error, fp or the Fetcher closed), through
//     Fetch.Notify;
//   - halt (Halt, Stop, the end of ownership), in closeHalt;
//   - a control request (seek, pause), in wakeLocked.
//
// Every other wait of the run (reading the committed offset, a backoff,
// MaxUnacked room, a receiver for a batch, a suspended session, a pause)
// holds the goroutine, as it has work to do or a time to keep.
//
// The protocol: park sets parked and then looks at the three once more;
// unpark clears parked and calls resume. Whichever clears parked first
// owns the run: a waker that clears it calls resume (and the next Step
// waits on runMu for the parking step to return); a park that finds
// something there and clears it goes on itself; a park that finds it
// cleared already returns parked, and the resumed step goes on. So no
// wake-up is lost, and no two goroutines run the partition at once.

// With Turns (the merged stream), a run also waits in a second place:
// in Turns' queue for a turn (state runWaiting), before it takes records;
// a turn given back resumes the first in the queue, and a halt or a
// control request takes a waiting run out of it (Turns.cancel) and
// resumes it, as unpark does a parked one. A run gives its turn back
// before it parks (see turns.go).

// park parks the run of the fetch session on fp unless something to act
// on came meanwhile: true when parked (the step returns), false when the
// session goes on. wake is the session's control channel.
func (m *Manager) park(fp Fetch, wake <-chan struct{}) bool {
	m.giveTurn()
	m.state.Store(runParked)
	select {
	case <-fp.Ready():
	case <-m.halt:
	case <-wake:
	default:
		return true
	}
	// Something came: go on, unless a waker took the run first: it has
	// called resume (the next step goes on), or queued it for a turn
	// (then take it out again: whatever came, the session looks at it).
	if m.state.CompareAndSwap(runParked, runActive) {
		return false
	}
	return !(m.p.Turns != nil && m.p.Turns.cancel(m))
}

// queued is park for a run that m.p.Turns queued (take, pass): true when
// it waits there (the step returns parked); false when a halt or a
// control request came and it was taken out again (the session goes on,
// without a turn).
func (m *Manager) queued(wake <-chan struct{}) bool {
	select {
	case <-m.halt:
	case <-wake:
	default:
		return true
	}
	return !m.p.Turns.cancel(m)
}

// unpark resumes a parked or queued run; a no-op when the run is active.
// Safe for concurrent use; never blocks (resume must not).
func (m *Manager) unpark() {
	for {
		switch m.state.Load() {
		case runParked:
			if m.state.CompareAndSwap(runParked, runActive) {
				m.resume()
				return
			}
		case runWaiting:
			if m.p.Turns.cancel(m) {
				m.resume()
				return
			}
		default:
			return
		}
	}
}

// readyWake is the fetch session's Notify: records or an error may be
// there. Without Turns it is unpark; with them, a parked run resumes
// with a turn or queues for one.
func (m *Manager) readyWake() {
	if m.p.Turns == nil {
		m.unpark()
		return
	}
	m.p.Turns.wakeParked(m)
}

// giveTurn gives the run's turn back, if it holds one. The run's step
// only.
func (m *Manager) giveTurn() {
	if m.turn {
		m.p.Turns.give(m)
	}
}

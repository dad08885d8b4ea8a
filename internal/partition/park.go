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

// park parks the run of the fetch session on fp unless something to act
// on came meanwhile: true when parked (the step returns), false when the
// session goes on. wake is the session's control channel.
func (m *Manager) park(fp Fetch, wake <-chan struct{}) bool {
	m.parked.Store(true)
	select {
	case <-fp.Ready():
	case <-m.halt:
	case <-wake:
	default:
		return true
	}
	// Something came: go on, unless a waker cleared parked first (it has
	// called resume: the next step goes on).
	return !m.parked.CompareAndSwap(true, false)
}

// unpark resumes a parked run; a no-op when the run is not parked. Safe
// for concurrent use; never blocks (resume must not).
func (m *Manager) unpark() {
	if m.parked.Load() && m.parked.CompareAndSwap(true, false) {
		m.resume()
	}
}

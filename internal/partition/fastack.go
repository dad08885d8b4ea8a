package partition

// The in-order ack path. A consumer that acks each message in the order it
// got them (the Each loop's common case) acks without the manager's lock:
// Ack moves ackNext past its offset with one compare-and-swap, and
// whoever next takes the lock to read or change the tracker first folds
// those acks into it (fold). The lock would otherwise be taken and
// released for every message by the user's goroutine and, between two
// cores, cost it more than the rest of the ack.
//
// The path is on (ackNext >= 0) only while every offset from ackNext up to
// ackEnd (exclusive) is delivered and not acked: it is turned on when a
// run of offsets is taken for delivery while everything held is one run
// of unacked offsets, and extended by each run that follows on. Anything
// else that acks or changes the tracker (an ack out of order, a batch ack,
// Abandon, a seek, a truncation, Stop) turns it off under the lock first
// (fastOff: a Swap, so that an Ack racing with it either moved ackNext
// before, and is folded, or fails its compare-and-swap and takes the
// lock). An ack the path takes is therefore always one the tracker would
// have counted as AckOK at that moment.

// fold gives the tracker the acks the in-order path took since the last
// fold. m.mu held; the tracker exists.
func (m *Manager) fold() {
	if n := m.ackNext.Load(); n >= 0 {
		m.foldTo(n)
	}
}

// fastOff turns the in-order path off, folding what it took. m.mu held.
func (m *Manager) fastOff() {
	if n := m.ackNext.Swap(-1); n >= 0 {
		m.foldTo(n)
	}
}

func (m *Manager) foldTo(n int64) {
	if n <= m.folded {
		return
	}
	m.acks += uint64(m.tracker.AckBelow(n)) // all of them: see above
	m.folded = n
}

// fastDelivered keeps the in-order path after the run first..end-1 was
// taken for delivery: extended when it follows on from the path's end,
// otherwise turned on if everything held is one run of unacked offsets
// (and nothing is abandoned), off if not. m.mu held.
func (m *Manager) fastDelivered(first, end int64) {
	if m.ackNext.Load() >= 0 && first == m.ackEnd.Load() {
		m.ackEnd.Store(end)
		return
	}
	m.fastOff()
	if m.stopped || len(m.abandoned) > 0 {
		return
	}
	if from, ok := m.tracker.UnackedRun(); ok {
		m.folded = from
		m.ackEnd.Store(end)
		m.ackNext.Store(from) // last: the path's window is set when it opens
	}
}

// fastAck is Ack's in-order path: true if it took the ack.
func (m *Manager) fastAck(offset int64) bool {
	if offset < 0 || offset != m.ackNext.Load() || offset >= m.ackEnd.Load() || !m.ackNext.CompareAndSwap(offset, offset+1) {
		return false
	}
	select {
	case m.space <- struct{}{}:
	default:
	}
	return true
}

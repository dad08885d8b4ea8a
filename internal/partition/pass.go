package partition

import "context"

// PassResult is what Handout.Pass decided.
type PassResult int

const (
	// PassOK: the message may go to the user now.
	PassOK PassResult = iota
	// PassDropped: the manager stopped or lost the partition; the message
	// and the rest of its batch were abandoned (see Message.Abandon): the
	// user never sees them, a drain does not wait for them, and the next
	// owner gets them. Or a seek was applied since the batch was handed
	// out: its messages were forgotten, and the next ones come from the
	// new position.
	PassDropped
	// PassCancelled: ctx ended while the session was suspended; nothing
	// was decided, so the same message may be asked about again.
	PassCancelled
)

// Pass decides whether h.Messages[i] may be passed on to the user now, for
// an iterator that takes a batch whole and hands its messages out one by
// one (Consumer.Each): with it, they go out as on an unbuffered channel of
// messages, none once the manager stops or loses the partition and none
// while the session is suspended. It blocks while the session is
// suspended, until it is healthy again (PassOK), the manager stops
// (PassDropped) or ctx ends (PassCancelled). Not safe for concurrent use
// on one batch (one iterator takes it); the healthy path takes no lock: it
// keeps the fence's suspension channel (closed when a suspension begins)
// from one message to the next, as the manager's own hand-off does.
//
// The lease is read on the monotonic clock for every message, not once
// per batch: the caller's code runs between two messages of a batch for
// as long as it likes, so a reading taken when the batch was taken says
// nothing of the instant a later message goes out, and only a reading
// taken before each message shows it goes out before the lease's end. A
// flag set by a timer at that end would not do either: after a pause of
// the process the flag may be read before the timer ran.
func (h *Handout) Pass(ctx context.Context, i int) PassResult {
	m := h.m
	for {
		select {
		case <-m.halt:
			h.abandonFrom(i)
			return PassDropped
		default:
		}
		if m.seeks.Load() != h.seeks {
			return PassDropped // forgotten by the seek: nothing to abandon
		}
		if h.suspended == nil {
			h.suspended = m.p.Fence.Suspended()
		}
		select {
		case <-h.suspended:
			h.suspended = nil // closed: ask again once healthy
		default:
			// The channel says healthy; the clock must agree: after a
			// pause the channel is still open until a goroutine notices,
			// while the lease already ended. Lease then shuts Ready.
			if _, ok := m.p.Fence.Lease(); ok {
				return PassOK
			}
			h.suspended = nil
		}
		m.waitingReady.Store(true)
		select {
		case <-m.p.Fence.Ready():
		case <-m.halt:
		case <-ctx.Done():
			m.waitingReady.Store(false)
			return PassCancelled
		}
		m.waitingReady.Store(false)
	}
}

// abandonFrom abandons the batch's messages from index i on.
func (h *Handout) abandonFrom(i int) {
	for _, msg := range h.Messages[i:] {
		h.m.Abandon(msg.Offset)
	}
}

// Watch returns what a hand-off of h's messages that blocks must watch
// after Pass said PassOK: halt, closed once h's manager stops or loses
// the partition, and suspended, closed when the session's suspension
// begins (as Pass last saw it). owner identifies h's manager.
func (h *Handout) Watch() (owner *Manager, halt, suspended <-chan struct{}) {
	return h.m, h.m.halt, h.suspended
}

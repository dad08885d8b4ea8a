package zkconn

import (
	"testing"
	"time"
)

// TestLeaseEndFollowsAnswers: the instant Lease reports (reused while the
// end has not moved) is always 2/3 of the timeout after the latest
// answered send, also after an answer moved it and when the negotiated
// timeout changed it; and the lease ends on the clock.
func TestLeaseEndFollowsAnswers(t *testing.T) {
	const timeout = 3 * time.Second
	s := leaseSession(timeout)
	check := func(what string, window time.Duration) {
		t.Helper()
		until, id, ok := s.Lease()
		want := s.base.Add(time.Duration(s.lastAnswered.Load()) + window)
		if !until.Equal(want) || id != 0x1234 || !ok {
			t.Fatalf("%s: Lease() = %v, %x, %v; want until %v (%v after the base), session 0x1234, ok",
				what, until.Sub(s.base), id, ok, want.Sub(s.base), window)
		}
	}
	check("first", 2*time.Second)
	check("again (reused)", 2*time.Second)
	s.lastAnswered.Store(s.lastAnswered.Load() + int64(time.Millisecond))
	check("after an answer", 2*time.Second)
	s.negotiated.Store(int64(1500 * time.Millisecond))
	check("after the server negotiated 1.5s", time.Second)

	// An answer sent longer ago than the window: no lease, its end past.
	s.lastAnswered.Store(s.now() - int64(2*time.Second))
	if until, _, ok := s.Lease(); ok || !time.Now().After(until) {
		t.Fatalf("answered 2s ago with a 1s window: ok %v, until %v from now", ok, time.Until(until))
	}
	s.live.Store(0)
	if _, id, ok := s.Lease(); ok || id != 0 {
		t.Fatalf("no session: Lease() = %x, %v", id, ok)
	}
}

package metadata

import (
	"errors"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/retry"
)

// within reports whether d is base with at most retry.Jitter of jitter.
func within(d, base time.Duration) bool {
	j := time.Duration(float64(base) * retry.Jitter)
	return d >= base-j && d <= base+j
}

func TestSchedule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	resync := 60 * time.Second
	s := newSchedule(100*ms, resync, t0)
	first := s.next().Sub(t0)
	if !within(first, resync) {
		t.Fatalf("first resync in %v, want 60s ± 50%%", first)
	}
	if s.takeResync(t0) {
		t.Fatal("a resync is due at the start")
	}
	// A burst: the first event sets the deadline, later ones join it.
	s.event(t0.Add(10 * ms))
	s.event(t0.Add(50 * ms))
	s.event(t0.Add(105 * ms))
	if got := s.next().Sub(t0); got != 110*ms {
		t.Fatalf("burst refresh at %v, want 110ms", got)
	}
	if s.due(t0.Add(109*ms)) || !s.due(t0.Add(110*ms)) {
		t.Fatal("due() wrong around the debounce deadline")
	}
	if s.takeResync(t0.Add(110 * ms)) {
		t.Fatal("an event's refresh is taken for a resync")
	}
	s.done(t0.Add(120*ms), nil)
	if got := s.next().Sub(t0); got != first {
		t.Fatalf("after an event's refresh next at %v, want the resync at %v", got, first)
	}
	// The resync comes due, and the next one is a jittered interval later.
	now := t0.Add(first)
	if !s.due(now) || !s.takeResync(now) {
		t.Fatal("the resync is not due")
	}
	s.done(now, nil)
	if d := s.next().Sub(now); !within(d, resync) {
		t.Fatalf("next resync in %v, want 60s ± 50%%", d)
	}
	// Failures back off, jittered, from 250ms to 10s (with a resync too
	// far away to interfere).
	s = newSchedule(100*ms, time.Hour, now)
	for i, base := range []time.Duration{250 * ms, 500 * ms, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		s.done(now, errors.New("x"))
		if d := s.next().Sub(now); !within(d, base) {
			t.Fatalf("backoff %d is %v, want %v ± 50%%", i, d, base)
		}
		now = s.next()
	}
	// An event while failing still refreshes after the debounce.
	s.done(now, errors.New("x"))
	s.event(now)
	if got := s.next().Sub(now); got != 100*ms {
		t.Fatalf("event while failing: next in %v, want 100ms", got)
	}
	s.done(now, nil)
	if s.failing || s.next().Before(now.Add(time.Second)) {
		t.Fatalf("a success left the schedule failing: next in %v", s.next().Sub(now))
	}
	s.done(now, errors.New("x"))
	if d := s.next().Sub(now); !within(d, 250*ms) {
		t.Fatalf("success did not reset the backoff: next in %v", d)
	}
}

func TestScheduleShortResyncCapsBackoff(t *testing.T) {
	t0 := time.Unix(0, 0)
	s := newSchedule(5*time.Second, 100*time.Millisecond, t0)
	s.event(t0)
	if got := s.next().Sub(t0); got > 150*time.Millisecond {
		t.Fatalf("next in %v, want the resync (≤150ms)", got)
	}
	for range 10 {
		s.done(t0, errors.New("x"))
		if d := s.next().Sub(t0); d > 150*time.Millisecond {
			t.Fatalf("backoff %v beyond the resync interval", d)
		}
	}
}

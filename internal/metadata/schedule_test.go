package metadata

import (
	"errors"
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	s := newSchedule(100*ms, 2*time.Second, t0)
	if got := s.next(); !got.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("first poll at %v, want t0+2s", got.Sub(t0))
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
	s.done(t0.Add(120*ms), nil)
	if got := s.next().Sub(t0); got != 2120*ms {
		t.Fatalf("after a refresh next at %v, want 2.12s", got)
	}
	// Failures back off 250ms, 500ms, 1s, 2s, 2s (capped at the poll).
	now := t0.Add(3 * time.Second)
	for _, want := range []time.Duration{250 * ms, 500 * ms, time.Second, 2 * time.Second, 2 * time.Second} {
		s.done(now, errors.New("x"))
		if got := s.next().Sub(now); got != want {
			t.Fatalf("backoff %v, want %v", got, want)
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
	if s.backoff != 0 || s.next().Sub(now) != 2*time.Second {
		t.Fatalf("success did not reset the backoff: %+v", s)
	}
}

func TestScheduleDebounceLongerThanPoll(t *testing.T) {
	t0 := time.Unix(0, 0)
	s := newSchedule(5*time.Second, time.Second, t0)
	s.event(t0)
	if got := s.next().Sub(t0); got != time.Second {
		t.Fatalf("next in %v, want the poll (1s)", got)
	}
}

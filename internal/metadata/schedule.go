package metadata

import "time"

// minBackoff is the first retry delay after a failed refresh; it doubles up
// to the poll interval.
const minBackoff = 250 * time.Millisecond

// schedule decides when the watcher refreshes: Debounce after the first
// watch event of a burst, every poll interval (LeaderRefresh) otherwise,
// and with a doubling backoff while refreshes fail. It is pure (the caller
// passes the time) and not safe for concurrent use.
type schedule struct {
	debounce time.Duration
	poll     time.Duration

	dirty   bool      // an event is waiting for its refresh
	dirtyAt time.Time // when the first event of the burst arrived
	pollAt  time.Time // next periodic refresh (or retry, while failing)
	backoff time.Duration
}

// newSchedule returns a schedule whose first periodic refresh is one poll
// interval after now. poll must be positive and debounce not negative.
func newSchedule(debounce, poll time.Duration, now time.Time) *schedule {
	return &schedule{debounce: debounce, poll: poll, pollAt: now.Add(poll)}
}

// event records a watch event or filter change at now. Events while one
// is pending join it, so a burst causes one refresh.
func (s *schedule) event(now time.Time) {
	if !s.dirty {
		s.dirty, s.dirtyAt = true, now
	}
}

// next returns when the next refresh is due.
func (s *schedule) next() time.Time {
	if s.dirty {
		if at := s.dirtyAt.Add(s.debounce); at.Before(s.pollAt) {
			return at
		}
	}
	return s.pollAt
}

// due reports whether a refresh is due at now.
func (s *schedule) due(now time.Time) bool { return !now.Before(s.next()) }

// done records a refresh that finished at now with err. The next refresh is
// a poll interval later, or a backoff later while refreshes fail; either
// way strictly after now, so the caller never spins.
func (s *schedule) done(now time.Time, err error) {
	s.dirty = false
	if err == nil {
		s.backoff = 0
		s.pollAt = now.Add(s.poll)
		return
	}
	switch {
	case s.backoff == 0:
		s.backoff = min(minBackoff, s.poll)
	case s.backoff < s.poll:
		s.backoff = min(2*s.backoff, s.poll)
	}
	s.pollAt = now.Add(s.backoff)
}

package metadata

import (
	"time"

	"github.com/zkgroup/zkgroup/internal/retry"
)

// Failure backoff: the first retry after a failed refresh comes about
// minBackoff later, growing (jittered, exponential) to maxBackoff, or to
// the resync interval when that is shorter.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 10 * time.Second
)

// schedule decides when the watcher refreshes: Debounce after the first
// watch event of a burst, a jittered resync interval after the previous
// resync, and with a jittered exponential backoff while refreshes fail. It
// decides when only; what a refresh reads is the refresher's business. The
// caller passes the time; it is not safe for concurrent use.
type schedule struct {
	debounce time.Duration
	resync   *retry.Backoff // initial == max: a jittered constant interval
	backoff  *retry.Backoff

	dirty    bool      // an event is waiting for its refresh
	dirtyAt  time.Time // when the first event of the burst arrived
	resyncAt time.Time // next safety resync
	failing  bool      // the last refresh failed
	retryAt  time.Time // next retry, while failing
}

// newSchedule returns a schedule whose first resync is a jittered resync
// interval after now. resync must be positive and debounce not negative.
func newSchedule(debounce, resync time.Duration, now time.Time) *schedule {
	s := &schedule{
		debounce: debounce,
		resync:   retry.New(resync, resync),
		backoff:  retry.New(min(minBackoff, resync), min(maxBackoff, resync)),
	}
	s.resyncAt = now.Add(s.resync.Next())
	return s
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
	at := s.resyncAt
	if s.failing && s.retryAt.Before(at) {
		at = s.retryAt
	}
	if s.dirty {
		if d := s.dirtyAt.Add(s.debounce); d.Before(at) {
			at = d
		}
	}
	return at
}

// due reports whether a refresh is due at now.
func (s *schedule) due(now time.Time) bool { return !now.Before(s.next()) }

// takeResync reports whether a resync is due at now and, if so, schedules
// the next one a jittered interval later. The caller then asks the
// refresher for a resync, which it keeps pending until one succeeds.
func (s *schedule) takeResync(now time.Time) bool {
	if now.Before(s.resyncAt) {
		return false
	}
	s.resyncAt = now.Add(s.resync.Next())
	return true
}

// done records a refresh that finished at now with err. While refreshes
// fail the next one is a backoff later; the next refresh is always
// strictly after now, so the caller never spins.
func (s *schedule) done(now time.Time, err error) {
	s.dirty = false
	if err == nil {
		s.failing = false
		s.backoff.Reset()
		return
	}
	s.failing = true
	s.retryAt = now.Add(max(s.backoff.Next(), time.Millisecond))
}

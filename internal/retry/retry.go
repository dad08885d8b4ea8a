// Package retry is the one backoff used for every retry in zkgroup: claims,
// fetch restarts, commits, registration and sinks. Waits grow exponentially
// from an initial to a maximum interval and are jittered (±50 %), so that
// after a shared outage (a ZooKeeper restart, a broker loss) the members of
// a group and the partitions of a member do not retry in lockstep. It wraps
// cenkalti/backoff's ExponentialBackOff.
package retry

import (
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Jitter is the randomization factor: each wait lies within ±Jitter of the
// current interval.
const Jitter = 0.5

// Backoff yields jittered, exponentially growing waits. It is not safe for
// concurrent use: give each retry loop its own (New is cheap).
type Backoff struct {
	b backoff.ExponentialBackOff
}

// New returns a Backoff whose first wait is about initial and whose
// interval doubles up to max (max below initial is raised to initial).
// Non-positive initial is taken as 1 ms.
func New(initial, max time.Duration) *Backoff {
	if initial <= 0 {
		initial = time.Millisecond
	}
	if max < initial {
		max = initial
	}
	r := &Backoff{b: backoff.ExponentialBackOff{
		InitialInterval:     initial,
		RandomizationFactor: Jitter,
		Multiplier:          2,
		MaxInterval:         max,
	}}
	r.b.Reset()
	return r
}

// Next returns the next wait and grows the interval. It never blocks.
func (r *Backoff) Next() time.Duration { return r.b.NextBackOff() }

// Reset starts again from the initial interval (after a success).
func (r *Backoff) Reset() { r.b.Reset() }

// Wait sleeps for Next() and returns true, or returns false as soon as a
// or b is closed (either may be nil). It blocks for at most one wait.
func (r *Backoff) Wait(a, b <-chan struct{}) bool {
	t := time.NewTimer(r.Next())
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-a:
		return false
	case <-b:
		return false
	}
}

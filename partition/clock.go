package partition

import (
	"sync"
	"sync/atomic"
	"time"
)

// clockTick is the resolution of the delivery clock.
const clockTick = 2 * time.Millisecond

// deliveryClock is a coarse process-wide clock for the delivery hot path:
// reading it is one atomic load instead of a system clock read per
// message. While at least one Manager runs, a goroutine advances it every
// clockTick; it lags the real clock by at most a tick (plus scheduling
// delay), which is plenty for the ages it serves (Stats.OldestUnackedAge).
// Safe for concurrent use.
var deliveryClock struct {
	base  time.Time    // carries the monotonic reading the clock counts from
	nanos atomic.Int64 // time.Since(base) at the last tick

	mu    sync.Mutex
	users int
	stop  chan struct{}
	done  chan struct{}
}

func init() { deliveryClock.base = time.Now() }

// acquireClock starts the clock's goroutine if it is the first user. It
// blocks only on the clock's mutex.
func acquireClock() {
	c := &deliveryClock
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users++
	if c.users > 1 {
		return
	}
	c.nanos.Store(int64(time.Since(c.base)))
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		tick := time.NewTicker(clockTick)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				c.nanos.Store(int64(time.Since(c.base)))
			}
		}
	}(c.stop, c.done)
}

// releaseClock stops the clock's goroutine when the last user leaves, and
// waits for it to end.
func releaseClock() {
	c := &deliveryClock
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users--
	if c.users > 0 {
		return
	}
	close(c.stop)
	<-c.done
}

// clockNow reads the delivery clock: at most a tick behind time.Now.
func clockNow() time.Time {
	return deliveryClock.base.Add(time.Duration(deliveryClock.nanos.Load()))
}

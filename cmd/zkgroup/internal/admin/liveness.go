package admin

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Liveness tells whether the daemon's loops still turn: each loop calls
// Beat with its name every time it goes round; Check fails when a loop
// that beat once has not beaten for longer than the bound. The ZooKeeper
// session plays no part: a slow ZooKeeper makes a member unready, not
// dead. Safe for concurrent use; never blocks on I/O.
type Liveness struct {
	max   time.Duration
	now   func() time.Time
	mu    sync.Mutex
	beats map[string]time.Time
}

// NewLiveness returns a Liveness that fails a loop silent for more than
// bound (at least one second).
func NewLiveness(bound time.Duration) *Liveness {
	return &Liveness{max: max(bound, time.Second), now: time.Now, beats: map[string]time.Time{}}
}

// Beat records that the loop named loop turned now.
func (l *Liveness) Beat(loop string) {
	t := l.now()
	l.mu.Lock()
	l.beats[loop] = t
	l.mu.Unlock()
}

// Check returns nil while every loop that ever beat did so within the
// bound, else an error naming the silent loops and for how long.
func (l *Liveness) Check() error {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var stale []string
	for loop, at := range l.beats {
		if age := now.Sub(at); age > l.max {
			stale = append(stale, fmt.Sprintf("%s loop silent for %v", loop, age.Round(time.Second)))
		}
	}
	if len(stale) == 0 {
		return nil
	}
	slices.Sort(stale)
	return fmt.Errorf("admin: %s (bound %v)", strings.Join(stale, ", "), l.max)
}

// Loops returns the names of the loops that beat at least once, sorted.
func (l *Liveness) Loops() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.beats))
}

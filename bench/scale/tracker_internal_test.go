package scale

import (
	"testing"
	"time"
)

// TestTrackerWaits: the longest wait in the log counts only what the
// window's owner delivered of a kept partition, from the broker's append
// time; a record appended long before its delivery shows, one appended
// just before does not, however long the gap before it.
func TestTrackerWaits(t *testing.T) {
	tr := newTracker(3)
	tr.assign(0, 0) // kept by 0
	tr.assign(1, 1) // kept by 1
	tr.assign(0, 2) // moves to 1 in the window
	tr.openWindow()
	now := time.Now().UnixNano()
	tr.deliver(0, 0, now, now-int64(10*time.Millisecond))
	tr.deliver(1, 1, now, now-int64(3*time.Second)) // waited 3 s in the log
	tr.assign(1, 2)
	tr.deliver(1, 2, now, now-int64(time.Minute)) // moved: not counted
	tr.deliver(0, 1, now, now-int64(time.Hour))   // not the owner: not counted
	w := tr.longestWaits(anyMember)
	if w[0] < 10*time.Millisecond || w[0] > time.Second {
		t.Errorf("member 0's longest wait %v; want about 10 ms", w[0])
	}
	if w[1] < 3*time.Second || w[1] > 4*time.Second {
		t.Errorf("member 1's longest wait %v; want about 3 s", w[1])
	}
	tr.openWindow()
	if w := tr.longestWaits(anyMember); w[0] != 0 || w[1] != 0 {
		t.Errorf("after openWindow: %v; want none", w)
	}
}

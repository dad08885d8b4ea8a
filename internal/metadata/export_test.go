package metadata

import (
	"testing"
	"time"
)

// AwaitSnapshot waits on w's Changes until cond holds for a snapshot, for
// up to timeout; the tests of this package and of metadata_test share it.
func AwaitSnapshot(t *testing.T, w *Watcher, what string, timeout time.Duration, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s := w.Snapshot()
		if cond(s) {
			return s
		}
		select {
		case <-w.Changes():
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; last snapshot v%d: %v (err %v)", what, s.Version, s.Topics, w.Err())
		}
	}
}

// Resyncs returns how many safety resyncs of w have succeeded. The loop is
// sequential: once it grew by 2, a whole resync ran after the call that
// read it, so every change made before that call has been published.
func Resyncs(w *Watcher) uint64 { return w.resyncs.Load() }

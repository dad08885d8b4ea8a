package metadata

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/zkconn"
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

// ReadTopicsBoth reads topics over s with the store's batched read
// (partitionsMany) and with its single read (partitions, no watch), and
// returns each as text: the partitions, or the error's kind ("no node",
// "malformed", or the error).
func ReadTopicsBoth(s *zkconn.Session, topics []string) (many, single []string, err error) {
	z := newZKStore(s, func(watchKey) {})
	defer z.close()
	got, err := z.partitionsMany(topics, nil)
	if err != nil {
		return nil, nil, err
	}
	for i, t := range topics {
		many = append(many, readText(got[i].parts, got[i].err))
		parts, _, _, err := z.partitions(t, false, 0)
		single = append(single, readText(parts, err))
	}
	return many, single, nil
}

// ReadTopicsHad reads topics over s with the store's batched read, given
// the versions of the data already held (had, may be nil), and returns
// each node's version, whether it was found unchanged, and its text as
// ReadTopicsBoth's (empty when unchanged).
func ReadTopicsHad(s *zkconn.Session, topics []string, had []int64) (versions []int64, same []bool, text []string, err error) {
	z := newZKStore(s, func(watchKey) {})
	defer z.close()
	got, err := z.partitionsMany(topics, had)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, g := range got {
		versions, same = append(versions, g.version), append(same, g.same)
		if g.same {
			text = append(text, "")
		} else {
			text = append(text, readText(g.parts, g.err))
		}
	}
	return versions, same, text, nil
}

func readText(parts []partMeta, err error) string {
	switch {
	case errors.Is(err, errNoNode):
		return "no node"
	case isMalformed(err):
		return "malformed"
	case err != nil:
		return err.Error()
	}
	return fmt.Sprint(parts)
}

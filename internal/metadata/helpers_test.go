package metadata_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/logcheck"
	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// testConfig resyncs as often as allowed, so that awaitResyncs is quick.
func testConfig() metadata.Config {
	cfg := metadata.NewConfig()
	cfg.Resync = metadata.MinResync
	cfg.Debounce = 50 * time.Millisecond
	return cfg
}

// awaitResyncs waits until w has run n more safety resyncs: with n >= 2,
// everything that happened in ZooKeeper before the call has been read and
// published (or ignored), so the absence of a change can be checked.
func awaitResyncs(t *testing.T, w *metadata.Watcher, n uint64) {
	t.Helper()
	want := metadata.Resyncs(w) + n
	testcluster.Await(t, 60*time.Second, 10*time.Millisecond, fmt.Sprintf("%d resyncs", n), func() bool {
		return metadata.Resyncs(w) >= want
	})
}

// changed waits for one receive from Changes and checks that the snapshot
// then satisfies cond and has version want.
func changed(t *testing.T, w *metadata.Watcher, what string, want uint64, cond func(metadata.Snapshot) bool) metadata.Snapshot {
	t.Helper()
	select {
	case <-w.Changes():
	case <-time.After(90 * time.Second):
		t.Fatalf("%s did not fire Changes", what)
	}
	s := w.Snapshot()
	if !cond(s) || s.Version != want {
		t.Fatalf("after %s: version %d (want %d), topics %v", what, s.Version, want, s.Topics)
	}
	return s
}

// noChange fails when Changes holds a signal or the version is not want.
func noChange(t *testing.T, w *metadata.Watcher, what string, want uint64) {
	t.Helper()
	select {
	case <-w.Changes():
		t.Errorf("%s fired Changes (version %d)", what, w.Snapshot().Version)
	default:
	}
	if v := w.Snapshot().Version; v != want {
		t.Errorf("after %s: version %d, want %d", what, v, want)
	}
}

// preferred reports whether every partition of s is led by its first
// replica.
func preferred(t *testing.T, s metadata.Snapshot) {
	t.Helper()
	for topic, ps := range s.Topics {
		for _, p := range ps {
			if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
				t.Errorf("%s/%d: leader %d, replicas %v: want the first replica", topic, p.ID, p.Leader, p.Replicas)
			}
		}
	}
}

// testLogger logs through t.Log.
func testLogger(t *testing.T) *slog.Logger { return logcheck.TestLogger(t, slog.LevelInfo) }

// only selects the given topics.
func only(topics ...string) func(string) bool {
	return func(t string) bool { return slices.Contains(topics, t) }
}

// dial opens a ZooKeeper session on connect ("host:port/chroot") for a
// Watcher to read through, as a member's coordination session; the
// caller closes it after the Watcher.
func dial(t *testing.T, connect string) *zkconn.Session {
	t.Helper()
	servers, chroot, err := zkconn.ParseConnect(connect)
	if err != nil {
		t.Fatal(err)
	}
	s, err := zkconn.Dial(zkconn.Config{Servers: servers, Chroot: chroot, SessionTimeout: 6 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	answered(t, s)
	return s
}

// answered waits for an answer on s, so that the connection's send and
// receive goroutines, which go-zookeeper starts after it reports the
// session (and so after zkconn.Dial returns), run before a test takes its
// goroutine baseline.
func answered(t *testing.T, s *zkconn.Session) {
	t.Helper()
	if _, _, err := s.Exists("/"); err != nil {
		t.Fatal(err)
	}
}

// open opens a Watcher on c over a session of the test's and closes both
// at the end of the test.
func open(t *testing.T, c *testcluster.Cluster, filter func(string) bool) *metadata.Watcher {
	t.Helper()
	s := dial(t, c.ZooKeeperConnect())
	t.Cleanup(s.Close)
	w, err := metadata.OpenSession(s, filter, testConfig(), testLogger(t))
	if err != nil {
		t.Fatalf("OpenSession: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w
}

// await waits on Changes until cond holds for a snapshot, for up to 90s.
func await(t *testing.T, w *metadata.Watcher, what string, cond func(metadata.Snapshot) bool) metadata.Snapshot {
	t.Helper()
	return metadata.AwaitSnapshot(t, w, what, 90*time.Second, cond)
}

// led reports whether topic has n partitions, each with a leader.
func led(topic string, n int) func(metadata.Snapshot) bool {
	return func(s metadata.Snapshot) bool {
		ps := s.Topics[topic]
		if len(ps) != n {
			return false
		}
		for _, p := range ps {
			if p.Leader < 0 {
				return false
			}
		}
		return true
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

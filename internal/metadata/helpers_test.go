package metadata_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// testConfig polls quickly so that tests finish fast.
func testConfig() metadata.Config {
	cfg := metadata.NewConfig()
	cfg.SessionTimeout = 6 * time.Second
	cfg.LeaderRefresh = 300 * time.Millisecond
	cfg.Debounce = 50 * time.Millisecond
	return cfg
}

// testLogger logs through t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(&tWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct {
	mu sync.Mutex
	t  *testing.T
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// only selects the given topics.
func only(topics ...string) func(string) bool {
	return func(t string) bool { return slices.Contains(topics, t) }
}

// open opens a Watcher on c and closes it at the end of the test.
func open(t *testing.T, c *testcluster.Cluster, filter func(string) bool) *metadata.Watcher {
	t.Helper()
	w, err := metadata.Open(c.ZooKeeperConnect(), filter, testConfig(), testLogger(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
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

package metadata

import (
	"errors"
	"testing"
	"time"
)

// startFake starts a Watcher over a fake store.
func startFake(t *testing.T, f *fakeStore, filter func(string) bool, cfg Config) *Watcher {
	t.Helper()
	w := newWatcher(cfg, filter, quietLog())
	if err := w.start(f); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// fireFake fires a fake watch as the kazoo store's forwarder would.
func fireFake(w *Watcher, f *fakeStore, k watchKey) {
	for _, k := range f.fire(k) {
		w.onFire(k)
	}
}

// await waits on Changes until cond holds for a snapshot.
func await(t *testing.T, w *Watcher, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	return AwaitSnapshot(t, w, what, 60*time.Second, cond)
}

func TestWatcherOverFakeStore(t *testing.T) {
	f := newFakeStore()
	f.addTopic("a", 1)
	cfg := NewConfig()
	cfg.LeaderRefresh = time.Hour // only events refresh
	cfg.Debounce = 0
	w := startFake(t, f, func(s string) bool { return s != "x" }, cfg)
	s := w.Snapshot()
	if s.Version != 1 || len(s.Topics["a"]) != 1 {
		t.Fatalf("initial snapshot %+v", s)
	}

	f.addTopic("b", 2, 3)
	f.addTopic("x", 4)
	fireFake(w, f, watchKey{root: true})
	s = await(t, w, "topic b", func(s Snapshot) bool { return len(s.Topics["b"]) == 2 })
	if s.Version != 2 {
		t.Errorf("version %d, want 2", s.Version)
	}
	if ps, ok := s.Topics["x"]; !ok || ps != nil {
		t.Errorf("x = %v, %v: want listed, unselected", ps, ok)
	}

	w.SetFilter(nil)
	await(t, w, "x selected", func(s Snapshot) bool { return len(s.Topics["x"]) == 1 })

	f.removeTopic("a")
	fireFake(w, f, watchKey{topic: "a"})
	fireFake(w, f, watchKey{root: true})
	await(t, w, "a removed", func(s Snapshot) bool { _, ok := s.Topics["a"]; return !ok })

	// A refresh that changes nothing does not bump the version.
	v := w.Snapshot().Version
	fireFake(w, f, watchKey{root: true})
	f.mu.Lock()
	f.leaders["b"][0] = 7
	f.mu.Unlock()
	fireFake(w, f, watchKey{topic: "b"})
	s = await(t, w, "leader 7", func(s Snapshot) bool { return len(s.Topics["b"]) == 2 && s.Topics["b"][0].Leader == 7 })
	if s.Version != v+1 {
		t.Errorf("version %d, want %d", s.Version, v+1)
	}

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if !errors.Is(w.Err(), ErrClosed) || !f.closed {
		t.Fatalf("after Close: Err %v, store closed %v", w.Err(), f.closed)
	}
}

func TestWatcherPollsAndRecovers(t *testing.T) {
	f := newFakeStore()
	f.addTopic("a", 1)
	cfg := NewConfig()
	cfg.LeaderRefresh = MinLeaderRefresh
	w := startFake(t, f, nil, cfg)
	f.mu.Lock()
	f.calls = make(chan struct{}, 1)
	f.mu.Unlock()
	// refreshed waits until a refresh has started after a whole one ran:
	// the loop is sequential, so the whole one has been published.
	refreshed := func() {
		t.Helper()
		for range 3 {
			select {
			case <-f.calls:
			case <-time.After(30 * time.Second):
				t.Fatal("no periodic refresh")
			}
		}
	}

	// While the topic list fails, the last view is served and Err says why.
	f.mu.Lock()
	f.leaders["a"][0] = 2
	f.topicErr = errConn
	f.mu.Unlock()
	refreshed()
	if !errors.Is(w.Err(), errConn) || w.Snapshot().Topics["a"][0].Leader != 1 {
		t.Fatalf("Err %v, snapshot %v", w.Err(), w.Snapshot().Topics)
	}
	// Leaders are polled without any watch event.
	f.mu.Lock()
	f.topicErr = nil
	f.mu.Unlock()
	await(t, w, "leader 2", func(s Snapshot) bool { return s.Topics["a"][0].Leader == 2 })
	refreshed()
	if err := w.Err(); err != nil {
		t.Fatalf("Err stays %v", err)
	}
}

func TestOpenRejectsBadArguments(t *testing.T) {
	if _, err := Open("zk:2181", nil, Config{}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("zero Config: %v", err)
	}
	if _, err := Open("zk:2181/a/", nil, NewConfig(), nil); !errors.Is(err, ErrInvalidConnect) {
		t.Errorf("bad chroot: %v", err)
	}
}

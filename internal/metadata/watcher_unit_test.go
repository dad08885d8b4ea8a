package metadata

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// startFake starts a Watcher over a fake store. cfg is not validated, so
// tests may resync far more often than Validate allows.
func startFake(t *testing.T, f *fakeStore, filter func(string) bool, cfg Config) *Watcher {
	t.Helper()
	w := newWatcher(cfg, filter, quietLog())
	if err := w.start(f); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// eventsOnly is a config under which only watch events refresh.
func eventsOnly() Config {
	cfg := NewConfig()
	cfg.Resync = time.Hour
	cfg.Debounce = 0
	return cfg
}

// fireFake fires a fake watch as the session store's node-event hook would.
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

// awaitResyncs waits until n more resyncs than before have succeeded: the
// loop is sequential, so everything that happened before the first one
// started has been read and published.
func awaitResyncs(t *testing.T, w *Watcher, n uint64) {
	t.Helper()
	want := w.resyncs.Load() + n
	deadline := time.Now().Add(30 * time.Second)
	for w.resyncs.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d resyncs", n)
		}
		time.Sleep(time.Millisecond) // polling a counter
	}
}

// noChange fails when Changes holds a signal.
func noChange(t *testing.T, w *Watcher, what string) {
	t.Helper()
	select {
	case <-w.Changes():
		t.Fatalf("%s fired Changes: %v", what, w.Snapshot().Topics)
	default:
	}
}

// readsDuring runs f, waits for the one receive from Changes it causes,
// checks cond, and returns the store's reads in between: list reads and
// node reads per topic.
func readsDuring(t *testing.T, w *Watcher, s *fakeStore, what string, f func(), cond func(Snapshot) bool) (int, map[string]int) {
	t.Helper()
	l0, n0 := s.reads()
	f()
	select {
	case <-w.Changes():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not fire Changes", what)
	}
	if snap := w.Snapshot(); !cond(snap) {
		t.Fatalf("after %s: %v", what, snap.Topics)
	}
	l1, n1 := s.reads()
	nodes := map[string]int{}
	for k, n := range n1 {
		if d := n - n0[k]; d > 0 {
			nodes[k] = d
		}
	}
	return l1 - l0, nodes
}

func TestWatcherOverFakeStore(t *testing.T) {
	f := newFakeStore()
	f.addTopic("a", 1)
	w := startFake(t, f, func(s string) bool { return s != "x" }, eventsOnly())
	s := w.Snapshot()
	if s.Version != 1 || len(s.Topics["a"]) != 1 || s.Topics["a"][0].Leader != 1 {
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
	// Counts: the selected topics read, none of the unselected.
	if got, want := Counts(w.Snapshot().Topics), map[string]int{"a": 1, "b": 2}; !maps.Equal(got, want) {
		t.Errorf("Counts %v; want %v", got, want)
	}

	w.SetFilter(nil)
	await(t, w, "x selected", func(s Snapshot) bool { return len(s.Topics["x"]) == 1 })

	f.removeTopic("a")
	fireFake(w, f, watchKey{topic: "a"})
	fireFake(w, f, watchKey{root: true})
	await(t, w, "a removed", func(s Snapshot) bool { _, ok := s.Topics["a"]; return !ok })

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

// TestLeaderChangeIgnored: live leaders (state nodes) change, through
// resyncs and through an unrelated node event: no Changes, same version,
// the preferred leaders stay.
// A snapshot is the published view itself: taking one allocates nothing
// per partition (a member takes one per rebalance, of every partition of
// the group), and a change publishes a new view without touching the one
// handed out.
func TestSnapshotShared(t *testing.T) {
	f := newFakeStore()
	f.addTopic("a", 1, 2, 3)
	f.addTopic("b", 1)
	w := startFake(t, f, nil, eventsOnly())
	if n := testing.AllocsPerRun(100, func() { _ = w.Snapshot() }); n != 0 {
		t.Errorf("Snapshot allocates %v times", n)
	}
	before := w.Snapshot()
	f.setReplicas("a", 0, 3, 1)
	fireFake(w, f, watchKey{topic: "a"})
	after := await(t, w, "a reassigned", func(s Snapshot) bool { return s.Topics["a"][0].Leader == 3 })
	if before.Topics["a"][0].Leader != 1 || !slices.Equal(before.Topics["a"][0].Replicas, []int32{1, 2}) || len(before.Topics["a"]) != 3 {
		t.Errorf("the view handed out changed: %+v", before.Topics["a"])
	}
	if &after.Topics["b"][0] != &before.Topics["b"][0] {
		t.Error("the unchanged topic b was copied, not kept")
	}
}

func TestLeaderChangeIgnored(t *testing.T) {
	f := newFakeStore()
	f.addTopic("a", 1, 2, 3)
	cfg := eventsOnly()
	cfg.Resync = 5 * time.Millisecond
	w := startFake(t, f, nil, cfg)
	v := w.Snapshot().Version
	awaitResyncs(t, w, 1)
	noChange(t, w, "a resync with nothing changed")

	for p := range int32(3) {
		f.setLeader("a", p, 9) // broker 1, 2 and 3 die one after the other
	}
	awaitResyncs(t, w, 2)
	// The topic node is rewritten with the same assignment (as Kafka does
	// when it adds a topic id): its watch fires, nothing changed.
	fireFake(w, f, watchKey{topic: "a"})
	awaitResyncs(t, w, 2)
	noChange(t, w, "a leader change")
	s := w.Snapshot()
	if s.Version != v {
		t.Errorf("version %d, want %d", s.Version, v)
	}
	for i, p := range s.Topics["a"] {
		if p.Leader != int32(i+1) {
			t.Errorf("a/%d led by %d, want its preferred leader %d", i, p.Leader, i+1)
		}
	}
}

// TestChangesFireOnRealChanges: a replica list changed, a partition added,
// a topic created and deleted each fire Changes and bump the version, and
// each reads only what its watch names.
func TestChangesFireOnRealChanges(t *testing.T) {
	f := newFakeStore()
	f.addTopic("a", 1, 2)
	f.addTopic("b", 3)
	w := startFake(t, f, nil, eventsOnly())
	version := w.Snapshot().Version
	check := func(what string, list int, nodes map[string]int, gotList int, gotNodes map[string]int) {
		t.Helper()
		if gotList != list || !maps.Equal(gotNodes, nodes) {
			t.Errorf("%s: read the list %d times and nodes %v; want %d and %v", what, gotList, gotNodes, list, nodes)
		}
		if s := w.Snapshot(); s.Version != version+1 {
			t.Errorf("%s: version %d, want %d", what, s.Version, version+1)
		}
		version++
		noChange(t, w, what+" (twice)")
	}

	l, n := readsDuring(t, w, f, "a/1 reassigned", func() {
		f.setReplicas("a", 1, 3, 2)
		fireFake(w, f, watchKey{topic: "a"})
	}, func(s Snapshot) bool { return s.Topics["a"][1].Leader == 3 })
	check("a/1 reassigned", 0, map[string]int{"a": 1}, l, n)

	l, n = readsDuring(t, w, f, "a partition added", func() {
		f.setReplicas("a", 2, 1, 2)
		fireFake(w, f, watchKey{topic: "a"})
	}, func(s Snapshot) bool { return len(s.Topics["a"]) == 3 })
	check("a partition added", 0, map[string]int{"a": 1}, l, n)

	l, n = readsDuring(t, w, f, "c created", func() {
		f.addTopic("c", 1)
		fireFake(w, f, watchKey{root: true})
	}, func(s Snapshot) bool { return len(s.Topics["c"]) == 1 })
	check("c created", 1, map[string]int{"c": 1}, l, n)

	l, n = readsDuring(t, w, f, "b deleted", func() {
		f.removeTopic("b")
		fireFake(w, f, watchKey{root: true})
	}, func(s Snapshot) bool { _, ok := s.Topics["b"]; return !ok })
	check("b deleted", 1, map[string]int{}, l, n)
}

func TestWatcherResyncsAndRecovers(t *testing.T) {
	f := newFakeStore()
	f.addTopic("a", 1)
	cfg := eventsOnly()
	cfg.Resync = 10 * time.Millisecond
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
				t.Fatal("no resync")
			}
		}
	}

	// While the topic list fails, the last view is served and Err says why.
	f.setReplicas("a", 0, 2)
	f.mu.Lock()
	f.topicErr = errConn
	f.mu.Unlock()
	refreshed()
	if !errors.Is(w.Err(), errConn) || w.Snapshot().Topics["a"][0].Leader != 1 {
		t.Fatalf("Err %v, snapshot %v", w.Err(), w.Snapshot().Topics)
	}
	// A change missed by a lost watch is repaired by a resync.
	f.mu.Lock()
	f.topicErr = nil
	f.mu.Unlock()
	await(t, w, "a/0 reassigned to 2", func(s Snapshot) bool { return s.Topics["a"][0].Leader == 2 })
	refreshed()
	if err := w.Err(); err != nil {
		t.Fatalf("Err stays %v", err)
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	if _, err := OpenSession(nil, nil, Config{}, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("zero Config: %v", err)
	}
}

// TestZKStoreFires: which session events end which of the store's watches.
func TestZKStoreFires(t *testing.T) {
	root, topic := watchKey{root: true}, watchKey{topic: "t"}
	cases := []struct {
		k    watchKey
		ev   zk.Event
		want bool
	}{
		{root, zk.Event{Type: zk.EventNodeChildrenChanged}, true},
		{root, zk.Event{Type: zk.EventNodeDataChanged}, false}, // someone's data watch on the list node
		{root, zk.Event{Type: zk.EventNodeDeleted}, true},
		{topic, zk.Event{Type: zk.EventNodeDataChanged}, true},
		{topic, zk.Event{Type: zk.EventNodeChildrenChanged}, false},
		{topic, zk.Event{Type: zk.EventNodeDeleted}, true},
		{topic, zk.Event{Type: zk.EventNodeCreated}, false},
		{topic, zk.Event{Type: zk.EventNotWatching, Err: zk.ErrSessionExpired}, true},
		{root, zk.Event{Type: zk.EventNotWatching, Err: zk.ErrSessionExpired}, true},
		{root, zk.Event{Type: zk.EventNotWatching, Err: zk.ErrClosing}, false},
	}
	for _, c := range cases {
		if got := fires(c.k, c.ev); got != c.want {
			t.Errorf("fires(%+v, %v %v) = %v, want %v", c.k, c.ev.Type, c.ev.Err, got, c.want)
		}
	}
}

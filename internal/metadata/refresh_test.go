package metadata

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
)

func never() bool { return false }

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func all(string) bool { return true }

// refresherAB returns a refresher over a fake store holding topic a
// (partitions led by 1 and 2) and topic b (one partition led by 3).
func refresherAB() (*fakeStore, *refresher) {
	f := newFakeStore()
	f.addTopic("a", 1, 2)
	f.addTopic("b", 3)
	return f, newRefresher(f, quietLog())
}

// mustRefresh is r.refresh (never stopped) that fails t on an error.
func mustRefresh(t *testing.T, r *refresher, filter func(string) bool, prev map[string][]Partition) map[string][]Partition {
	t.Helper()
	v, err := r.refresh(filter, prev, never)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRefreshReadsAndArmsOnce(t *testing.T) {
	f, r := refresherAB()

	v := mustRefresh(t, r, all, nil)
	want := map[string][]Partition{
		"a": {{Topic: "a", ID: 0, Leader: 1, Replicas: []int32{1, 2}}, {Topic: "a", ID: 1, Leader: 2, Replicas: []int32{2, 3}}},
		"b": {{Topic: "b", ID: 0, Leader: 3, Replicas: []int32{3, 4}}},
	}
	if c := diffViews(want, v); !c.empty() {
		t.Fatalf("view %v differs from %v: %+v", v, want, c)
	}
	if f.arms != 3 {
		t.Fatalf("armed %d watches, want 3 (root, a, b)", f.arms)
	}
	if f.manyReads != 0 {
		t.Fatalf("%d batched reads by the first refresh, want 0 (each node read with its watch)", f.manyReads)
	}
	// A resync arms nothing: every watch is pending; it reads the nodes
	// in one batched read.
	r.markResync()
	v = mustRefresh(t, r, all, v)
	if f.arms != 3 {
		t.Fatalf("armed %d watches after a resync, want still 3", f.arms)
	}
	if f.manyReads != 1 || f.nodeReads["a"] != 2 || f.nodeReads["b"] != 2 {
		t.Fatalf("resync: %d batched reads, nodes read %v; want 1, each node twice in all", f.manyReads, f.nodeReads)
	}
	// A fired watch is armed again, once.
	r.release(f.fire(watchKey{topic: "a"}))
	r.release(f.fire(watchKey{root: true}))
	mustRefresh(t, r, all, v)
	for _, k := range []watchKey{{root: true}, {topic: "a"}, {topic: "b"}} {
		if n := f.pending(k); n != 1 {
			t.Errorf("%+v: %d pending watches, want 1", k, n)
		}
	}
}

// TestRefreshResyncDecodesChangesOnly: a resync reads every selected
// node, but decodes only those whose data changed since the view's
// partitions were built from them (by a resync's read or a node's own);
// a change the watch missed is still seen.
func TestRefreshResyncDecodesChangesOnly(t *testing.T) {
	f, r := refresherAB()
	v := mustRefresh(t, r, all, nil) // single reads, with watches
	resync := func(want int) {
		t.Helper()
		before := f.decodes
		r.markResync()
		v = mustRefresh(t, r, all, v)
		if got := f.decodes - before; got != want {
			t.Fatalf("resync decoded %d nodes, want %d", got, want)
		}
	}
	resync(0)
	f.setReplicas("b", 0, 5, 6) // unseen by its watch (not fired)
	resync(1)
	if got := v["b"]; len(got) != 1 || got[0].Leader != 5 {
		t.Fatalf("b after the resync: %v, want led by 5", got)
	}
	if got := v["a"]; len(got) != 2 || got[1].Leader != 2 {
		t.Fatalf("a after the resync: %v, want kept", got)
	}
	f.setReplicas("a", 1, 7, 8)
	r.release(f.fire(watchKey{topic: "a"}))
	v = mustRefresh(t, r, all, v) // a, on its own
	if got := v["a"]; len(got) != 2 || got[1].Leader != 7 {
		t.Fatalf("a after its watch: %v, want partition 1 led by 7", got)
	}
	resync(0)
	// Unselected and selected again: read in full.
	v = mustRefresh(t, r, func(t string) bool { return t != "a" }, v)
	resync(1)
	if len(v["a"]) != 2 {
		t.Fatalf("a selected again: %v", v["a"])
	}
}

// TestRefreshReadsOnlyWhatFired counts the store's reads: nothing without
// an event, one topic node for its watch, the list (and the new topic) for
// the list's watch, and the list and every selected node on a resync.
func TestRefreshReadsOnlyWhatFired(t *testing.T) {
	f := newFakeStore()
	f.addTopic("a", 1, 2)
	f.addTopic("b", 3)
	f.addTopic("skip", 1)
	filter := func(t string) bool { return !strings.HasPrefix(t, "skip") }
	r := newRefresher(f, quietLog())
	v := mustRefresh(t, r, filter, nil)
	step := func(what string, wantList int, wantNodes map[string]int) {
		t.Helper()
		l0, n0 := f.reads()
		var err error
		if v, err = r.refresh(filter, v, never); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		l1, n1 := f.reads()
		got := map[string]int{}
		for k, n := range n1 {
			if d := n - n0[k]; d > 0 {
				got[k] = d
			}
		}
		if l1-l0 != wantList || !maps.Equal(got, wantNodes) {
			t.Errorf("%s: read the list %d times and nodes %v; want %d and %v", what, l1-l0, got, wantList, wantNodes)
		}
		if r.reads != wantList+len(wantNodes) {
			t.Errorf("%s: refresher counted %d reads", what, r.reads)
		}
	}
	step("nothing fired", 0, map[string]int{})
	f.setLeader("a", 0, 2) // a state node: nothing can see it
	step("a leader changed", 0, map[string]int{})

	f.setReplicas("a", 0, 2, 1)
	r.release(f.fire(watchKey{topic: "a"}))
	step("a's node changed", 0, map[string]int{"a": 1})
	if v["a"][0].Leader != 2 {
		t.Errorf("a/0 preferred leader %d after the reassignment, want 2", v["a"][0].Leader)
	}

	f.addTopic("c", 1)
	r.release(f.fire(watchKey{root: true}))
	step("c created", 1, map[string]int{"c": 1})

	f.addTopic("skip2", 1)
	r.release(f.fire(watchKey{root: true}))
	step("an unselected topic created", 1, map[string]int{})

	f.removeTopic("b")
	r.release(f.fire(watchKey{topic: "b"}))
	r.release(f.fire(watchKey{root: true}))
	step("b deleted", 1, map[string]int{}) // gone from the list: its node is not read
	if _, ok := v["b"]; ok {
		t.Error("b is still in the view")
	}

	r.markResync()
	step("resync", 1, map[string]int{"a": 1, "c": 1})
	step("after the resync", 0, map[string]int{})
}

func TestRefreshFilterAndVanishing(t *testing.T) {
	f := newFakeStore()
	f.addTopic("keep", 1)
	f.addTopic("skip", 2)
	f.addTopic("gone", 3)
	f.addTopic("empty")
	f.mu.Lock()
	delete(f.parts, "gone") // listed but deleted before its node is read
	f.parts["empty"] = []partMeta{{ID: 0}}
	f.mu.Unlock()
	r := newRefresher(f, quietLog())
	v := mustRefresh(t, r, func(t string) bool { return t != "skip" }, nil)
	if ps, ok := v["skip"]; !ok || ps != nil {
		t.Errorf("skip = %v, %v; want present with nil partitions", ps, ok)
	}
	if _, ok := v["gone"]; ok {
		t.Errorf("gone is in the view: %v", v)
	}
	if ps := v["keep"]; len(ps) != 1 || ps[0].Leader != 1 {
		t.Errorf("keep = %v; want one partition led by 1", ps)
	}
	if ps := v["empty"]; len(ps) != 1 || ps[0].Leader != -1 {
		t.Errorf("empty = %v; want one partition with leader -1 (no replicas)", ps)
	}
	if f.pending(watchKey{topic: "skip"}) != 0 {
		t.Error("an unselected topic was watched")
	}

	// The filter changes: the newly selected topic is read, the
	// deselected one loses its partitions without a read.
	_, n0 := f.reads()
	v = mustRefresh(t, r, func(t string) bool { return t == "skip" }, v)
	_, n1 := f.reads()
	if len(v["skip"]) != 1 || v["keep"] != nil || v["empty"] != nil {
		t.Errorf("after the filter changed: %v", v)
	}
	if n1["skip"]-n0["skip"] != 1 || n1["keep"] != n0["keep"] {
		t.Errorf("node reads %v -> %v; want skip read once, keep not", n0, n1)
	}
}

func TestRefreshMalformedSkipped(t *testing.T) {
	f := newFakeStore()
	f.addTopic("bad", 1)
	f.addTopic("badids", 1)
	f.addTopic("good", 1)
	f.mu.Lock()
	f.partErr["bad"] = jsonErr()
	_, idErr := decodeTopic("badids", []byte(`{"version":1,"partitions":{"3":[1]}}`))
	f.partErr["badids"] = idErr
	f.mu.Unlock()
	r := newRefresher(f, quietLog())
	v, err := r.refresh(all, nil, never)
	if err != nil {
		t.Fatalf("malformed nodes must not be errors: %v", err)
	}
	if v["bad"] != nil || v["badids"] != nil || len(v["good"]) != 1 {
		t.Errorf("view %v; want bad and badids without partitions", v)
	}
	if _, ok := v["bad"]; !ok {
		t.Error("a malformed topic must stay listed")
	}
	if len(r.malformed) != 2 {
		t.Errorf("recorded %d malformed nodes, want 2: %v", len(r.malformed), r.malformed)
	}
	// Malformed nodes are not read again until their watch fires...
	_, n0 := f.reads()
	v = mustRefresh(t, r, all, v)
	if _, n1 := f.reads(); n1["bad"] != n0["bad"] {
		t.Error("a malformed node was read again without an event")
	}
	// ... and a repair is seen through it.
	f.mu.Lock()
	delete(f.partErr, "bad")
	f.mu.Unlock()
	r.release([]watchKey{{topic: "bad"}})
	if v, err = r.refresh(all, v, never); err != nil || len(v["bad"]) != 1 {
		t.Fatalf("after the repair: %v, %v", v["bad"], err)
	}
	if len(r.malformed) != 1 {
		t.Errorf("malformed after the repair: %v", r.malformed)
	}
}

func TestRefreshKeepsLastGoodOnErrors(t *testing.T) {
	f, r := refresherAB()
	v1 := mustRefresh(t, r, all, nil)

	// Topic list unreadable: no view, and the list stays stale.
	f.mu.Lock()
	f.topicErr = errConn
	f.mu.Unlock()
	r.release(f.fire(watchKey{root: true}))
	v, err := r.refresh(all, v1, never)
	var re *ReadError
	if v != nil || !errors.As(err, &re) || !errors.Is(err, errConn) || re.Path != topicsPath {
		t.Fatalf("refresh = %v, %v; want nil and a *ReadError for %s", v, err, topicsPath)
	}
	if !r.listStale {
		t.Fatal("the list is not stale after its read failed")
	}

	// A topic node unreadable: the view keeps its last partitions, and
	// only that node is read again.
	f.mu.Lock()
	f.topicErr = nil
	f.partErr["a"] = errConn
	f.mu.Unlock()
	f.setReplicas("a", 0, 9)
	r.release(f.fire(watchKey{topic: "a"}))
	v, err = r.refresh(all, v1, never)
	if !errors.As(err, &re) || re.Path != topicPath("a") {
		t.Fatalf("err = %v; want a *ReadError for %s", err, topicPath("a"))
	}
	if v["a"][0].Leader != 1 {
		t.Errorf("a/0 = %+v, want the last good one", v["a"][0])
	}
	if v1["a"][0].Leader != 1 {
		t.Error("refresh modified the previous view")
	}
	f.mu.Lock()
	delete(f.partErr, "a")
	f.mu.Unlock()
	l0, n0 := f.reads()
	v, err = r.refresh(all, v, never)
	l1, n1 := f.reads()
	if err != nil || v["a"][0].Leader != 9 {
		t.Fatalf("retry: a = %v, %v", v["a"], err)
	}
	if l1 != l0 || n1["a"] != n0["a"]+1 || n1["b"] != n0["b"] {
		t.Errorf("the retry read the list %d times, a %d, b %d; want 0, 1, 0", l1-l0, n1["a"]-n0["a"], n1["b"]-n0["b"])
	}

	// The topic list missing: ErrNoCluster.
	f.mu.Lock()
	f.topicErr = errNoNode
	f.mu.Unlock()
	r.markResync()
	if _, err := r.refresh(all, v1, never); !errors.Is(err, ErrNoCluster) {
		t.Fatalf("err = %v, want ErrNoCluster", err)
	}
}

func TestRefreshStops(t *testing.T) {
	f := newFakeStore()
	for _, n := range []string{"a", "b", "c"} {
		f.addTopic(n, 1)
	}
	r := newRefresher(f, quietLog())
	prev := map[string][]Partition{"a": {{Topic: "a", ID: 0, Leader: 7}}}
	v, err := r.refresh(all, prev, func() bool { return true })
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	if len(v["a"]) != 1 || v["a"][0].Leader != 7 {
		t.Errorf("a = %v, want the previous partitions", v["a"])
	}
	if !r.stale["b"] && r.known["b"] {
		t.Error("an unread topic is neither stale nor unknown")
	}
}

func TestBuildPartitions(t *testing.T) {
	got := buildPartitions("t", []partMeta{{ID: 2, Replicas: []int32{1, 3}}, {ID: 1, Replicas: []int32{5}}, {ID: 0}})
	if len(got) != 3 {
		t.Fatalf("got %v", got)
	}
	for i, want := range []int32{-1, 5, 1} {
		if got[i].ID != int32(i) || got[i].Leader != want || got[i].Topic != "t" {
			t.Errorf("partition %d = %+v, want ID %d leader %d", i, got[i], i, want)
		}
	}
}

func TestForEachStops(t *testing.T) {
	var c atomic.Int32
	ran := forEach(10, 1, func() bool { return c.Load() >= 3 }, func(int) { c.Add(1) })
	calls := int(c.Load())
	n := 0
	for _, r := range ran {
		if r {
			n++
		}
	}
	if n != calls || calls < 3 || calls > 4 {
		t.Fatalf("ran %d, calls %d; want 3 or 4 and equal", n, calls)
	}
	if got := forEach(0, 4, never, func(int) { t.Fatal("called") }); len(got) != 0 {
		t.Fatal("forEach(0) ran something")
	}
}

// refreshedMany returns a fake store of n topics t00.. (one partition
// each), a refresher over it and the refresher's first view.
func refreshedMany(t *testing.T, n int) (*fakeStore, *refresher, map[string][]Partition) {
	t.Helper()
	f := newFakeStore()
	for i := range n {
		f.addTopic(fmt.Sprintf("t%02d", i), 1)
	}
	r := newRefresher(f, quietLog())
	return f, r, mustRefresh(t, r, all, nil)
}

// TestRefreshManyReadsInOneBatchThenArms: more topics without a watch
// than readWorkers are read in one batched read (the view needs no
// more), and arm then sets each watch once, decoding only a node that
// changed between the two reads, which is marked stale and read again,
// with its change.
func TestRefreshManyReadsInOneBatchThenArms(t *testing.T) {
	const n = 3 * readWorkers
	f, r, v := refreshedMany(t, n)
	if len(v) != n {
		t.Fatalf("view of %d topics, want %d", len(v), n)
	}
	if f.manyReads != 1 || f.arms != 1 {
		t.Fatalf("first refresh: %d batched reads, %d watches armed; want 1 and 1 (the list's)", f.manyReads, f.arms)
	}
	f.setReplicas("t03", 0, 2, 3) // between the view's read and the watch's
	decoded := f.decodes
	if stale, err := r.arm(never); !stale || err != nil {
		t.Fatalf("arm after a node changed since the view's read: stale %v, error %v; want true, nil", stale, err)
	}
	if got := f.decodes - decoded; got != 1 {
		t.Fatalf("arm decoded %d nodes, want 1 (the one that changed)", got)
	}
	if f.arms != 1+n {
		t.Fatalf("%d watches armed, want %d", f.arms, 1+n)
	}
	for i := range n {
		if k := (watchKey{topic: fmt.Sprintf("t%02d", i)}); f.pending(k) != 1 {
			t.Fatalf("%v: %d watches pending, want 1", k, f.pending(k))
		}
	}
	if stale, err := r.arm(never); stale || err != nil {
		t.Fatalf("a second arm with every watch set: stale %v, error %v; want false, nil", stale, err)
	}
	if f.arms != 1+n {
		t.Fatalf("a second arm armed again: %d watches", f.arms)
	}
	_, before := f.reads()
	v = mustRefresh(t, r, all, v)
	if got := v["t03"][0].Leader; got != 2 {
		t.Fatalf("t03/0 led by %d after the refresh of the stale node, want 2", got)
	}
	if _, after := f.reads(); after["t03"]-before["t03"] != 1 || after["t00"] != before["t00"] {
		t.Fatalf("refresh after arm read t03 %d and t00 %d times, want 1 and 0",
			after["t03"]-before["t03"], after["t00"]-before["t00"])
	}
}

// TestRefreshArmFailure: a watch that cannot be set is an error of arm
// (its caller backs off), and the node stays to arm and is read again.
func TestRefreshArmFailure(t *testing.T) {
	f, r, v := refreshedMany(t, 2*readWorkers)
	boom := errors.New("boom")
	f.mu.Lock()
	f.partErr["t01"] = boom
	f.mu.Unlock()
	stale, err := r.arm(never)
	var re *ReadError
	if !errors.Is(err, boom) || !errors.As(err, &re) || re.Path != topicPath("t01") || !stale {
		t.Fatalf("arm with t01 failing: stale %v, error %v; want true and a *ReadError for %s", stale, err, topicPath("t01"))
	}
	if !r.unarmed["t01"] || !r.stale["t01"] || len(r.unarmed) != 1 {
		t.Fatalf("after the failure: unarmed %v, t01 stale %v; want only t01, stale", r.unarmed, r.stale["t01"])
	}
	f.mu.Lock()
	delete(f.partErr, "t01")
	f.mu.Unlock()
	mustRefresh(t, r, all, v) // t01 alone: read with its watch
	if len(r.unarmed) != 0 || !r.armed["t01"] || f.pending(watchKey{topic: "t01"}) != 1 {
		t.Fatalf("after the refresh: unarmed %v, t01 armed %v with %d watches; want none, true, 1",
			r.unarmed, r.armed["t01"], f.pending(watchKey{topic: "t01"}))
	}
}

package metadata

import (
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
)

func never() bool { return false }

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestRefreshReadsAndArmsOnce(t *testing.T) {
	f := newFakeStore()
	f.addTopic("a", 1, 2)
	f.addTopic("b", 3)
	r := newRefresher(f, quietLog())
	all := func(string) bool { return true }

	v, err := r.refresh(all, nil, never)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]Partition{
		"a": {{Topic: "a", ID: 0, Leader: 1, Replicas: []int32{1}}, {Topic: "a", ID: 1, Leader: 2, Replicas: []int32{2}}},
		"b": {{Topic: "b", ID: 0, Leader: 3, Replicas: []int32{3}}},
	}
	if c := diffViews(want, v); !c.empty() {
		t.Fatalf("view %v differs from %v: %+v", v, want, c)
	}
	if f.arms != 3 {
		t.Fatalf("armed %d watches, want 3 (root, a, b)", f.arms)
	}
	// A second refresh arms nothing: every watch is pending.
	if _, err := r.refresh(all, v, never); err != nil {
		t.Fatal(err)
	}
	if f.arms != 3 {
		t.Fatalf("armed %d watches after the second refresh, want still 3", f.arms)
	}
	// A fired watch is armed again, once.
	r.release(f.fire(watchKey{topic: "a"}))
	r.release(f.fire(watchKey{root: true}))
	if _, err := r.refresh(all, v, never); err != nil {
		t.Fatal(err)
	}
	for _, k := range []watchKey{{root: true}, {topic: "a"}, {topic: "b"}} {
		if n := f.pending(k); n != 1 {
			t.Errorf("%+v: %d pending watches, want 1", k, n)
		}
	}
}

func TestRefreshFilterAndVanishing(t *testing.T) {
	f := newFakeStore()
	f.addTopic("keep", 1)
	f.addTopic("skip", 2)
	f.addTopic("gone", 3)
	f.mu.Lock()
	delete(f.parts, "gone") // listed but deleted before its node is read
	delete(f.leaders["keep"], 0)
	f.mu.Unlock()
	r := newRefresher(f, quietLog())
	v, err := r.refresh(func(t string) bool { return t != "skip" }, nil, never)
	if err != nil {
		t.Fatal(err)
	}
	if ps, ok := v["skip"]; !ok || ps != nil {
		t.Errorf("skip = %v, %v; want present with nil partitions", ps, ok)
	}
	if _, ok := v["gone"]; ok {
		t.Errorf("gone is in the view: %v", v)
	}
	if ps := v["keep"]; len(ps) != 1 || ps[0].Leader != -1 {
		t.Errorf("keep = %v; want one partition with leader -1 (no state node)", ps)
	}
	if f.pending(watchKey{topic: "skip"}) != 0 {
		t.Error("an unselected topic was watched")
	}
}

func TestRefreshMalformedSkipped(t *testing.T) {
	f := newFakeStore()
	f.addTopic("bad", 1)
	f.addTopic("badstate", 1, 2)
	f.addTopic("panics", 1)
	f.mu.Lock()
	f.partErr["bad"] = jsonErr()
	f.partErr["panics"] = panicError{"index out of range"}
	f.leaderErr[statePath("badstate", 1)] = jsonErr()
	f.mu.Unlock()
	r := newRefresher(f, quietLog())
	v, err := r.refresh(func(string) bool { return true }, nil, never)
	if err != nil {
		t.Fatalf("malformed nodes must not be errors: %v", err)
	}
	if v["bad"] != nil || v["panics"] != nil {
		t.Errorf("malformed topics have partitions: %v", v)
	}
	if _, ok := v["bad"]; !ok {
		t.Error("a malformed topic must stay listed")
	}
	ps := v["badstate"]
	if len(ps) != 2 || ps[0].Leader != 1 || ps[1].Leader != -1 {
		t.Errorf("badstate = %v; want leaders [1 -1]", ps)
	}
	if len(r.malformed) != 3 {
		t.Errorf("recorded %d malformed nodes, want 3: %v", len(r.malformed), r.malformed)
	}
}

func TestRefreshKeepsLastGoodOnErrors(t *testing.T) {
	f := newFakeStore()
	f.addTopic("a", 1, 2)
	r := newRefresher(f, quietLog())
	all := func(string) bool { return true }
	v1, err := r.refresh(all, nil, never)
	if err != nil {
		t.Fatal(err)
	}

	// Topic list unreadable: no view.
	f.mu.Lock()
	f.topicErr = errConn
	f.mu.Unlock()
	v, err := r.refresh(all, v1, never)
	var re *ReadError
	if v != nil || !errors.As(err, &re) || !errors.Is(err, errConn) || re.Path != topicsPath {
		t.Fatalf("refresh = %v, %v; want nil and a *ReadError for %s", v, err, topicsPath)
	}

	// A leader unreadable: the view keeps its last leader.
	f.mu.Lock()
	f.topicErr = nil
	f.leaders["a"][0] = 9
	f.leaders["a"][1] = 8
	f.leaderErr[statePath("a", 1)] = errConn
	f.mu.Unlock()
	r.release(f.fire(watchKey{topic: "a"}))
	v, err = r.refresh(all, v1, never)
	if !errors.As(err, &re) || re.Path != statePath("a", 1) {
		t.Fatalf("err = %v; want a *ReadError for %s", err, statePath("a", 1))
	}
	if v["a"][1].Leader != 2 {
		t.Errorf("leader of a/1 = %d, want the last good 2", v["a"][1].Leader)
	}
	if v1["a"][0].Leader != 1 {
		t.Error("refresh modified the previous view")
	}

	// The topic list missing: ErrNoCluster.
	f.mu.Lock()
	f.topicErr = errNoNode
	f.mu.Unlock()
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
	v, err := r.refresh(func(string) bool { return true }, prev, func() bool { return true })
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	if len(v["a"]) != 1 || v["a"][0].Leader != 7 {
		t.Errorf("a = %v, want the previous partitions", v["a"])
	}
}

func TestBuildPartitions(t *testing.T) {
	prev := []Partition{{ID: 1, Leader: 5}}
	got := buildPartitions("t", []partMeta{{ID: 2, Replicas: []int32{1}}, {ID: 1}, {ID: 0}}, prev)
	if len(got) != 3 {
		t.Fatalf("got %v", got)
	}
	for i, want := range []int32{-1, 5, -1} {
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

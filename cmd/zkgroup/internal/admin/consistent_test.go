package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/manager"
)

// fakeZK is a group of one member, i1, over t/0..t/7: it answers the
// view's reads with the owners it holds now.
type fakeZK struct {
	mu     sync.Mutex
	owners map[TopicPartition]string
	reads  int
}

func (z *fakeZK) read() (GroupView, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.reads++
	v := GroupView{Subscription: "static:t", Members: []string{"i1"}, Topics: []string{"t"}, Owners: map[TopicPartition]string{}}
	for p := range int32(8) {
		tp := TopicPartition{"t", p}
		v.Partitions = append(v.Partitions, tp)
		if o := z.owners[tp]; o != "" {
			v.Owners[tp] = o
		}
	}
	return v, nil
}

func (z *fakeZK) claim(owner string, ps ...int32) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, p := range ps {
		z.owners[TopicPartition{"t", p}] = owner
	}
}

// fetching is i1 ready, fetching ps, its rebalance applied at applied.
func fetching(applied time.Time, ps ...int32) manager.Stats {
	st := manager.Stats{Group: "g", Instance: "i1", Members: []string{"i1"}, Ready: true, SessionHealthy: true,
		History: []manager.Rebalance{{Seq: 1, Applied: applied}}}
	for _, p := range ps {
		st.Assigned = append(st.Assigned, manager.TopicPartition{Topic: "t", Partition: p})
		st.Partitions = append(st.Partitions, manager.PartitionStats{Topic: "t", Partition: p, Committed: -1, HighWatermark: -1, Lag: -1})
	}
	return st
}

// pageSays is what the page shows from /status: its readiness, the
// partitions owned here (its stats), those the group view lists without
// owner, and those it lists as this member's.
func pageSays(t *testing.T, s *Server) (readiness string, ownedHere, unowned, thisMembers int) {
	t.Helper()
	code, body := get(t, s.Handler(), "/status")
	var st Status
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil || st.GroupView == nil {
		t.Fatalf("/status: %d %s", code, body)
	}
	for _, m := range st.GroupView.Members {
		if m.This {
			thisMembers = len(m.Partitions)
		}
	}
	return st.Readiness, len(st.Partitions), len(st.GroupView.Unowned), thisMembers
}

// TestStatusOneSnapshot: the page's statements agree. On a first run the
// group view is read before the member claims anything; once its
// rebalance applied, /status reads the view again before it answers
// (without waiting for the view's interval), so it never says "8
// partitions owned here" beside "8 partitions without owner". When the
// view still misses the member's claims (read through a lagging
// ZooKeeper server), the member's own partitions are shown as its own,
// and a partition owned by another member stays that member's.
func TestStatusOneSnapshot(t *testing.T) {
	zk := &fakeZK{owners: map[TopicPartition]string{}}
	viewer := NewViewer(zk.read, time.Hour, nil) // only /status reads again
	if _, err := viewer.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{st: fetching(time.Time{})}
	s := New(Config{Group: "g", View: viewer})
	s.SetSource(src)
	// Joined, nothing claimed yet: the view agrees.
	src.update(func(st *manager.Stats) { *st = fetching(time.Time{}) })
	if r, own, un, this := pageSays(t, s); own != 0 || un != 8 || this != 0 {
		t.Fatalf("before the claims: %q, %d owned here, %d without owner, %d this member's", r, own, un, this)
	}
	// The rebalance claims all 8 and applies.
	zk.claim("i1", 0, 1, 2, 3, 4, 5, 6, 7)
	src.update(func(st *manager.Stats) { *st = fetching(time.Now(), 0, 1, 2, 3, 4, 5, 6, 7) })
	r, own, un, this := pageSays(t, s)
	if r != "ready: 8 partitions fetching" || own != 8 || un != 0 || this != 8 {
		t.Errorf("after the rebalance: %q, %d owned here, %d without owner, %d this member's; want 8, 0, 8", r, own, un, this)
	}
	if zk.reads != 2 {
		t.Errorf("%d view reads, want 2 (one more on the rebalance)", zk.reads)
	}

	// A view that lags: i2 took t/7, i1 released it and holds 0..6, the
	// view still shows 0..6 without owner.
	zk.claim("", 0, 1, 2, 3, 4, 5, 6)
	zk.claim("i2", 7)
	src.update(func(st *manager.Stats) { *st = fetching(time.Now(), 0, 1, 2, 3, 4, 5, 6) })
	s.viewAttempt.Store(0) // as if viewRefreshAfter had passed
	r, own, un, this = pageSays(t, s)
	if own != 7 || un != 0 || this != 7 {
		t.Errorf("lagging view: %q, %d owned here, %d without owner, %d this member's; want 7, 0, 7", r, own, un, this)
	}
	_, body := get(t, s.Handler(), "/status")
	var st Status
	_ = json.Unmarshal([]byte(body), &st)
	if o := fmt.Sprint(st.GroupView.Partitions[7]); o != "{t 7 i2}" {
		t.Errorf("t/7 shown as %s, want owned by i2", o)
	}
	// A lasting disagreement reads the view at most once per interval.
	before := zk.reads
	for range 5 {
		pageSays(t, s)
	}
	if zk.reads-before > 1 {
		t.Errorf("%d view reads for 5 requests within %v", zk.reads-before, viewRefreshAfter)
	}
}

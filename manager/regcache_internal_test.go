package manager

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

func regData(t *testing.T, strategy string, topics ...string) []byte {
	t.Helper()
	sub := map[string]int{}
	for _, tp := range topics {
		sub[tp] = 1
	}
	b, err := zkdata.MemberRegistration{Version: 1, Pattern: "static", Subscription: sub, Strategy: strategy}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// getWCounter counts the nodes read one by one (GetW).
type getWCounter struct {
	watchedReader
	mu    sync.Mutex
	reads map[string]int
}

func (c *getWCounter) GetW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	c.mu.Lock()
	c.reads[p]++
	c.mu.Unlock()
	return c.watchedReader.GetW(p)
}

func (c *getWCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reads
	c.reads = map[string]int{}
	return r
}

// TestRegistrationsWatched: registrations are read once and used again
// while their watches hold; a changed or deleted node fires its watch
// (signalled) and only it is read again; members subscribing alike share
// one Subscription; a malformed registration is kept with its error; a
// new session epoch reads everything again; a nil cache reads all.
func TestRegistrationsWatched(t *testing.T) {
	c := testcluster.Shared(t)
	s := dialSession(t, c)
	defer s.Close()
	group := testcluster.Name(t, "g")
	ids := []string{"m1", "m2", "m3", "m4"}
	paths := make([]string, len(ids))
	datas := [][]byte{regData(t, "balanced", "a", "b"), regData(t, "balanced", "a", "b"), regData(t, "balanced", "a"), []byte("{")}
	for i, id := range ids {
		paths[i] = zkdata.IDPath(group, id)
		if err := s.CreateParents(zkdata.IDsPath(group)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(paths[i], datas[i], 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	cr := &getWCounter{watchedReader: s, reads: map[string]int{}}
	cache := newRegistrations()
	defer cache.close()
	epoch := s.Status().Epoch

	read := func(ids, paths []string) []regRead {
		t.Helper()
		out, err := cache.read(cr, epoch, ids, paths)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	r := read(ids, paths)
	if n := cr.take(); len(n) != 4 {
		t.Fatalf("first read: %v, want each node once", n)
	}
	for _, x := range r[:3] {
		if x.readErr != nil || x.err != nil {
			t.Fatal(x.readErr, x.err)
		}
	}
	if r[0].sub != r[1].sub {
		t.Error("members subscribing alike got two Subscriptions")
	}
	if r[2].sub == r[0].sub || r[2].sub.Match("b") || !r[2].sub.Match("a") {
		t.Errorf("m3's subscription: %v, want topic a alone", r[2].sub)
	}
	if !errors.Is(r[3].err, ErrBadRegistration) {
		t.Errorf("malformed registration: %v, want ErrBadRegistration", r[3].err)
	}

	// Unchanged: nothing read.
	again := read(ids, paths)
	if n := cr.take(); len(n) != 0 {
		t.Errorf("second read of unchanged nodes read %v", n)
	}
	if again[0].sub != r[0].sub || again[2].czxid != r[2].czxid {
		t.Error("unchanged registrations came back different")
	}

	// m3 changes, m2 leaves: the watches fire; m3 alone is read again,
	// and m2 no longer asked for is dropped.
	if _, err := s.Set(paths[2], regData(t, "range", "a", "b"), -1); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(paths[1], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cache.changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no change signalled")
	}
	left := []string{ids[0], ids[2], ids[3]}
	leftPaths := []string{paths[0], paths[2], paths[3]}
	r = read(left, leftPaths)
	if n := cr.take(); len(n) != 1 || n[paths[2]] != 1 {
		t.Errorf("after m3 changed: read %v, want m3's node alone", n)
	}
	if r[1].reg.Strategy != "range" || r[1].sub != r[0].sub {
		t.Errorf("m3 after its change: strategy %q, shares m1's subscription %v", r[1].reg.Strategy, r[1].sub == r[0].sub)
	}
	if len(cache.nodes) != 3 || len(cache.subs) != 1 {
		t.Errorf("cache: %d nodes, %d subscriptions; want 3 and 1", len(cache.nodes), len(cache.subs))
	}

	// A node gone between the list and the read: ErrNoNode, not kept.
	gone := zkdata.IDPath(group, "gone")
	r = read(append(left, "gone"), append(leftPaths, gone))
	if !errors.Is(r[3].readErr, zk.ErrNoNode) || cache.nodes[gone] != nil {
		t.Errorf("missing node: %v, kept %v", r[3].readErr, cache.nodes[gone] != nil)
	}
	cr.take()

	// Another session epoch: everything is read again.
	epoch++
	read(left, leftPaths)
	if n := cr.take(); len(n) != 3 {
		t.Errorf("under a new epoch: read %v, want every node", n)
	}

	// No cache: one multiRead, no watch.
	var none *registrations
	nr, err := none.read(cr, epoch, left, leftPaths)
	if err != nil || nr[0].sub == nil || !nr[0].sub.Match("b") {
		t.Errorf("without a cache: %v, %v", nr, err)
	}
	if n := cr.take(); len(n) != 0 {
		t.Errorf("without a cache: read one by one %v", n)
	}
}

// TestAssignmentNodeWatched: the assignment node is read once and kept
// while its watch holds (the same watch comes back, nothing read), parsed
// only when asked; once it changes, the next read reads it again.
func TestAssignmentNodeWatched(t *testing.T) {
	c := testcluster.Shared(t)
	s := dialSession(t, c)
	defer s.Close()
	group := testcluster.Name(t, "g")
	p := zkdata.AssignmentPath(group)
	if err := s.CreateParents(zkdata.ConsumersPath(group)); err != nil {
		t.Fatal(err)
	}
	data := func(member string) []byte {
		b, err := zkdata.GroupAssignment{Digest: "d", Members: []string{member}, Topics: map[string][]int32{"t": {0}}}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := s.Create(p, data("a"), 0, nil); err != nil {
		t.Fatal(err)
	}
	var n assignmentNode
	st, w1, err := n.read(s, group, false)
	if err != nil || !st.exists || st.raw == nil || st.a.Members != nil {
		t.Fatalf("unparsed read: %+v, %v", st, err)
	}
	st, w2, err := n.read(s, group, true)
	if err != nil || w2 != w1 || !st.usable() || st.a.Owner("t", 0) != "a" {
		t.Fatalf("second read, parsed: same watch %v, %+v, %v", w2 == w1, st, err)
	}
	if _, err := s.Set(p, data("b"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w1:
	case <-time.After(10 * time.Second):
		t.Fatal("the node's watch did not fire")
	}
	st, w3, err := n.read(s, group, true)
	if err != nil || w3 == w1 || st.a.Owner("t", 0) != "b" {
		t.Fatalf("after the change: new watch %v, owner %q, %v", w3 != w1, st.a.Owner("t", 0), err)
	}
}

package manager

import (
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// TestEnsureGroupNodes: a new group's nodes are created in one
// transaction (they share its zxid); nodes that exist are left as they
// are and only the missing ones are created; members creating them at the
// same moment all succeed; and a chroot without /consumers gets it too.
func TestEnsureGroupNodes(t *testing.T) {
	c := testcluster.Shared(t)
	s := dialSession(t, c)
	defer s.Close()
	group := testcluster.Name(t, "g")
	nodes := []string{zkdata.ConsumersPath(group), zkdata.IDsPath(group), zkdata.OwnersPath(group), zkdata.OffsetsPath(group)}
	czxids := func(s *zkconn.Session) []int64 {
		t.Helper()
		var out []int64
		for _, p := range nodes {
			_, st, err := s.Get(p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			out = append(out, st.Czxid)
		}
		return out
	}

	if err := ensureGroupNodes(s, group); err != nil {
		t.Fatal(err)
	}
	first := czxids(s)
	for i, z := range first {
		if z != first[0] {
			t.Errorf("%s created in transaction %d, %s in %d: want one transaction", nodes[i], z, nodes[0], first[0])
		}
	}

	// Only the missing node is made; the others keep their zxid.
	if err := s.Delete(zkdata.OffsetsPath(group), -1); err != nil {
		t.Fatal(err)
	}
	if err := ensureGroupNodes(s, group); err != nil {
		t.Fatal(err)
	}
	again := czxids(s)
	for i := range 3 {
		if again[i] != first[i] {
			t.Errorf("%s made again (zxid %d, was %d)", nodes[i], again[i], first[i])
		}
	}
	if again[3] == first[3] {
		t.Errorf("%s not made again", nodes[3])
	}

	// Eight members of a new group at once.
	group2 := group + "-2"
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- ensureGroupNodes(s, group2) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent ensureGroupNodes: %v", err)
		}
	}
	for _, p := range []string{zkdata.IDsPath(group2), zkdata.OwnersPath(group2), zkdata.OffsetsPath(group2)} {
		if ok, _, err := s.Exists(p); err != nil || !ok {
			t.Errorf("%s: exists %v, %v", p, ok, err)
		}
	}

	// A chroot with nothing in it yet: /consumers is created with the rest.
	root := c.Chroot() + "/" + testcluster.Name(t, "root")
	if err := s.CreateParents(root[len(c.Chroot()):]); err != nil {
		t.Fatal(err)
	}
	s2, err := zkconn.Dial(zkconn.Config{Servers: []string{c.ZooKeeperAddr()}, Chroot: root, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := ensureGroupNodes(s2, group); err != nil {
		t.Fatal(err)
	}
	fresh := czxids(s2)
	if _, st, err := s2.Get(zkdata.ConsumersRootPath); err != nil || st.Czxid != fresh[0] {
		t.Errorf("/consumers under a new chroot: %v, created apart from the group's nodes", err)
	}
}

// TestMarkerDeleteOnlyWhenThere: without a restart grace, writeMarker
// deletes a marker left by an earlier run, and writes nothing when there
// is none (a delete of a missing node is a transaction of its own, queued
// behind every write of the ensemble). Measured by the zxids of two
// writes around it: consecutive when nothing else wrote in between,
// which other tests on the shared cluster may do, so a few tries.
func TestMarkerDeleteOnlyWhenThere(t *testing.T) {
	c := testcluster.Shared(t)
	s := dialSession(t, c)
	defer s.Close()
	group := testcluster.Name(t, "g")
	if err := ensureGroupNodes(s, group); err != nil {
		t.Fatal(err)
	}
	p := zkdata.StaticMemberPath(group, "m")
	if err := writeMarker(s, group, "m", []byte("x"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := writeMarker(s, group, "m", nil, 0); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := s.Exists(p); err != nil || ok {
		t.Fatalf("marker %s after writeMarker without grace: exists %v, %v", p, ok, err)
	}
	scratch := zkdata.ConsumersPath(group) + "/scratch"
	zxid := func() int64 {
		t.Helper()
		st, err := s.Set(scratch, nil, -1)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mzxid
	}
	if _, err := s.Create(scratch, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	gaps := map[int64]int{}
	for range 20 {
		before := zxid()
		if err := writeMarker(s, group, "m", nil, 0); err != nil {
			t.Fatal(err)
		}
		gap := zxid() - before
		if gap == 1 {
			return
		}
		gaps[gap]++
	}
	t.Fatalf("writeMarker without a marker to delete: zxid gaps %v over 20 tries, never 1 (it writes)", gaps)
}

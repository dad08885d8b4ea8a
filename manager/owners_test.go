package manager

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// TestOwnerCache: the owners view is read once and then kept by watches: an
// entry stays cached while its node is unchanged, is evicted when the node
// is deleted or rewritten (by anyone), and the next read returns the new
// owner, or none.
func TestOwnerCache(t *testing.T) {
	c := testcluster.Shared(t)
	group := testcluster.Name(t, "g")
	zc := testcluster.ZooKeeper(t, c)
	s := dialSession(t, c)
	defer s.Close()
	if err := s.CreateParents(zkdata.OwnerTopicPath(group, "t")); err != nil {
		t.Fatal(err)
	}
	full := func(p int32) string { return c.Chroot() + zkdata.OwnerPath(group, "t", p) }
	for p := range int32(4) {
		if _, err := zc.Create(full(p), zkdata.FormatOwner("a"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	oc := newOwnerCache(s, group)
	defer oc.close()
	cached := func() int {
		oc.mu.Lock()
		defer oc.mu.Unlock()
		n := 0
		for _, e := range oc.nodes {
			if e.cached {
				n++
			}
		}
		return n
	}
	check := func(want map[int32]string) {
		t.Helper()
		got, noDir, err := oc.read([]string{"t", "none"})
		if err != nil {
			t.Fatal(err)
		}
		if len(noDir) != 1 || noDir[0] != "none" {
			t.Errorf("topics without owners node: %v, want [none]", noDir)
		}
		if len(got) != len(want) {
			t.Errorf("owners %v, want %v", got, want)
		}
		for p, o := range want {
			if got[TopicPartition{Topic: "t", Partition: p}] != o {
				t.Errorf("partition %d: owner %q, want %q", p, got[TopicPartition{Topic: "t", Partition: p}], o)
			}
		}
	}
	check(map[int32]string{0: "a", 1: "a", 2: "a", 3: "a"})
	if n := cached(); n != 4 {
		t.Fatalf("cached entries after the first read: %d, want 4", n)
	}
	// Partition 1 changes hands, partition 2 is released, partition 3's
	// node is rewritten in place.
	if err := zc.Delete(full(1), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create(full(1), zkdata.FormatOwner("b"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := zc.Delete(full(2), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Set(full(3), zkdata.FormatOwner("c"), -1); err != nil {
		t.Fatal(err)
	}
	testcluster.Poll(10*time.Second, time.Millisecond, func() bool { return cached() == 1 })
	if n := cached(); n != 1 {
		t.Fatalf("cached entries after three nodes changed: %d, want 1 (partition 0)", n)
	}
	check(map[int32]string{0: "a", 1: "b", 3: "c"})
	if n := cached(); n != 3 {
		t.Errorf("cached entries after reading again: %d, want 3", n)
	}
}

// TestOwnerCacheChurn: while another session deletes, re-creates and
// rewrites owner nodes at random and the cache is read concurrently, no
// change is missed: once the churn stops, a read returns exactly what
// ZooKeeper holds.
func TestOwnerCacheChurn(t *testing.T) {
	c := testcluster.Shared(t)
	group := testcluster.Name(t, "g")
	zc := testcluster.ZooKeeper(t, c)
	s := dialSession(t, c)
	defer s.Close()
	const parts = 300
	if err := s.CreateParents(zkdata.OwnerTopicPath(group, "t")); err != nil {
		t.Fatal(err)
	}
	full := func(p int32) string { return c.Chroot() + zkdata.OwnerPath(group, "t", p) }
	truth := map[int32]string{}
	for p := range int32(parts) {
		if _, err := zc.Create(full(p), zkdata.FormatOwner("a"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		truth[p] = "a"
	}
	oc := newOwnerCache(s, group)
	defer oc.close()
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := oc.read([]string{"t"}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	owners := []string{"a", "b", "c", "d"}
	for range 1500 {
		p := int32(rng.IntN(parts))
		o := owners[rng.IntN(len(owners))]
		_, has := truth[p]
		switch {
		case !has:
			if _, err := zc.Create(full(p), zkdata.FormatOwner(o), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			truth[p] = o
		case rng.IntN(3) == 0:
			if err := zc.Delete(full(p), -1); err != nil {
				t.Fatal(err)
			}
			delete(truth, p)
		case rng.IntN(2) == 0:
			if _, err := zc.Set(full(p), zkdata.FormatOwner(o), -1); err != nil {
				t.Fatal(err)
			}
			truth[p] = o
		default:
			if err := zc.Delete(full(p), -1); err != nil {
				t.Fatal(err)
			}
			if _, err := zc.Create(full(p), zkdata.FormatOwner(o), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			truth[p] = o
		}
	}
	close(stop)
	<-readerDone
	var diff []string
	ok := testcluster.Poll(10*time.Second, 20*time.Millisecond, func() bool {
		got, _, err := oc.read([]string{"t"})
		if err != nil {
			t.Fatal(err)
		}
		diff = diff[:0]
		for p := range int32(parts) {
			if g, w := got[TopicPartition{Topic: "t", Partition: p}], truth[p]; g != w {
				diff = append(diff, fmt.Sprintf("%d: %q, want %q", p, g, w))
			}
		}
		return len(diff) == 0
	})
	if !ok {
		t.Fatalf("the cache kept %d stale entries: %v", len(diff), diff)
	}
}

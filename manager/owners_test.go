package manager

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// TestReadOwners: readOwners returns who holds each partition, as
// ZooKeeper has it at the time of the read: after nodes change hands, are
// released or are rewritten, the next read says so. A node that is not a
// partition's is ignored; a topic without an owners node is listed apart.
func TestReadOwners(t *testing.T) {
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
	if _, err := zc.Create(c.Chroot()+zkdata.OwnerTopicPath(group, "t")+"/lock", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	check := func(want map[int32]string) {
		t.Helper()
		got, noDir, err := readOwners(s, group, []string{"t", "none"})
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
	check(map[int32]string{0: "a", 1: "b", 3: "c"})
}

// TestReadOwnersChurn: while another session deletes, re-creates and
// rewrites owner nodes at random, reads (in several multiRead batches)
// go on without error, and once the churn stops a read returns exactly
// what ZooKeeper holds.
func TestReadOwnersChurn(t *testing.T) {
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
			if _, _, err := readOwners(s, group, []string{"t"}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	owners := []string{"a", "b", "c", "d"}
	for range 600 {
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
	got, _, err := readOwners(s, group, []string{"t"})
	if err != nil {
		t.Fatal(err)
	}
	var diff []string
	for p := range int32(parts) {
		if g, w := got[TopicPartition{Topic: "t", Partition: p}], truth[p]; g != w {
			diff = append(diff, fmt.Sprintf("%d: %q, want %q", p, g, w))
		}
	}
	if len(diff) > 0 {
		t.Fatalf("%d partitions read wrong: %v", len(diff), diff)
	}
}

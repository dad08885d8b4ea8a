package manager

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// TestOwnersUnownedListed: the unowned check of members computing from the
// stored assignment finds the partitions without node by listing each
// topic's owners node with a child watch: the first check lists every
// topic; while the watches hold nothing is read but the topic that has
// no owners node (listed at every check); a topic where a node came or
// went is listed again once its watch fired; never an owner node. A
// changed partition count and a new session list again; closeListed
// drops every hook.
func TestOwnersUnownedListed(t *testing.T) {
	f, s := newOwnersFixture(t)
	r := &countingReader{s: s}
	tp := func(topic string, p int32) TopicPartition { return TopicPartition{Topic: topic, Partition: p} }
	topics := []string{"t0", "t1", "t2"} // t2: no owners node
	counts := map[string]int{"t0": 4, "t1": 3, "t2": 2}
	for _, tn := range topics[:2] {
		if err := s.CreateParents(zkdata.OwnerTopicPath(f.group, tn)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []TopicPartition{tp("t0", 0), tp("t0", 2), tp("t1", 0), tp("t1", 1), tp("t1", 2)} {
		f.create(p, "a")
	}
	// A stray child and a partition beyond the count own nothing.
	for _, k := range []string{"x", "7"} {
		if _, err := f.zc.Create(f.c.Chroot()+zkdata.OwnerTopicPath(f.group, "t0")+"/"+k, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	var oc ownersCache
	t.Cleanup(oc.closeListed)
	check := func(epoch uint64, want []TopicPartition, wantRead ...string) {
		t.Helper()
		got, err := oc.unownedListed(r, f.group, topics, epoch, counts)
		checkUnowned(t, r, f.group, got, err, want, append([]string{}, wantRead...))
	}
	stale := func(topics ...string) {
		t.Helper()
		testcluster.Await(t, 10*time.Second, 10*time.Millisecond, fmt.Sprintf("the watches of %v to fire", topics), func() bool {
			oc.mu.Lock()
			defer oc.mu.Unlock()
			for _, tn := range topics {
				if e := oc.listed[tn]; e == nil || !e.stale.Load() {
					return false
				}
			}
			return true
		})
	}
	check(1, []TopicPartition{tp("t0", 1), tp("t0", 3), tp("t2", 0), tp("t2", 1)}, "ls t0", "ls t1", "ls t2")
	check(1, []TopicPartition{tp("t0", 1), tp("t0", 3), tp("t2", 0), tp("t2", 1)}, "ls t2")

	f.delete(tp("t1", 1))
	f.create(tp("t0", 3), "b")
	stale("t0", "t1")
	check(1, []TopicPartition{tp("t0", 1), tp("t1", 1), tp("t2", 0), tp("t2", 1)}, "ls t0", "ls t1", "ls t2")
	check(1, []TopicPartition{tp("t0", 1), tp("t1", 1), tp("t2", 0), tp("t2", 1)}, "ls t2")

	// t2's owners node comes with a node: listed, then watched too.
	if err := s.CreateParents(zkdata.OwnerTopicPath(f.group, "t2")); err != nil {
		t.Fatal(err)
	}
	f.create(tp("t2", 0), "a")
	check(1, []TopicPartition{tp("t0", 1), tp("t1", 1), tp("t2", 1)}, "ls t2")
	check(1, []TopicPartition{tp("t0", 1), tp("t1", 1), tp("t2", 1)})

	counts["t1"] = 4
	check(1, []TopicPartition{tp("t0", 1), tp("t1", 1), tp("t1", 3), tp("t2", 1)}, "ls t1")
	check(2, []TopicPartition{tp("t0", 1), tp("t1", 1), tp("t1", 3), tp("t2", 1)}, "ls t0", "ls t1", "ls t2")

	// The hooks go with the entries: a change after closeListed marks
	// nothing (the entry kept aside is not made stale).
	oc.mu.Lock()
	e := oc.listed["t0"]
	oc.mu.Unlock()
	oc.closeListed()
	f.delete(tp("t0", 0))
	marker := fmt.Sprintf("%s/%s", zkdata.OwnerTopicPath(f.group, "t0"), "marker")
	if _, err := s.Create(marker, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// A fresh watch on the same node fires for the marker: by then the
	// old hook would have seen the delete too.
	fired := make(chan struct{})
	remove := s.OnNodeEvent(zkdata.OwnerTopicPath(f.group, "t0"), func(zk.Event) { close(fired) })
	defer remove()
	if _, _, _, err := s.ChildrenWFull(zkdata.OwnerTopicPath(f.group, "t0")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(marker, -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the marker")
	}
	if e.stale.Load() {
		t.Error("an entry closed by closeListed was marked stale: its hook stayed")
	}
}

package manager

import (
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// TestOwnersUnownedListed: the unowned check of members computing from the
// stored assignment finds the partitions without node by listing: the
// first check lists every topic, then only the stats while nothing
// changes, the list of a topic where a node came or went, and never an
// owner node; a new session lists everything again.
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
	check := func(epoch uint64, want []TopicPartition, wantRead []string) {
		t.Helper()
		got, err := oc.unownedListed(r, f.group, topics, epoch, counts)
		checkUnowned(t, r, f.group, got, err, want, wantRead)
	}
	all := append(slices.Clone(topics), "ls t0", "ls t1")
	check(1, []TopicPartition{tp("t0", 1), tp("t0", 3), tp("t2", 0), tp("t2", 1)}, all)
	check(1, []TopicPartition{tp("t0", 1), tp("t0", 3), tp("t2", 0), tp("t2", 1)}, topics)

	f.delete(tp("t1", 1))
	f.create(tp("t0", 3), "b")
	check(1, []TopicPartition{tp("t0", 1), tp("t1", 1), tp("t2", 0), tp("t2", 1)}, all)
	check(1, []TopicPartition{tp("t0", 1), tp("t1", 1), tp("t2", 0), tp("t2", 1)}, topics)
	check(2, []TopicPartition{tp("t0", 1), tp("t1", 1), tp("t2", 0), tp("t2", 1)}, all)
}

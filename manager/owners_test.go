package manager

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// readOwners reads who holds each partition of topics in full, through
// a cache of its own (an ownersCache's first read): what the cache's
// reads must agree with.
func readOwners(r nodeReader, group string, topics []string) (owners map[TopicPartition]string, noDir []string, err error) {
	var oc ownersCache
	v, noDir, err := oc.read(r, group, topics, 0, nil)
	return ownersMap(v), noDir, err
}

// TestReadOwners: readOwners returns who holds each partition, as
// ZooKeeper has it at the time of the read: after nodes change hands, are
// released or are rewritten, the next read says so. A node that is not a
// partition's is ignored; a topic without an owners node is listed apart.
func TestReadOwners(t *testing.T) {
	o := newOwnerNodes(t)
	s, group, zc := o.s, o.group, o.zc
	for p := range int32(4) {
		o.create(p, "a")
	}
	if _, err := zc.Create(o.c.Chroot()+zkdata.OwnerTopicPath(group, "t")+"/lock", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
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
	o.delete(1)
	o.create(1, "b")
	o.delete(2)
	o.set(3, "c")
	check(map[int32]string{0: "a", 1: "b", 3: "c"})
}

// TestReadOwnersChurn: while another session deletes, re-creates and
// rewrites owner nodes at random, reads (in several multiRead batches)
// go on without error, and once the churn stops a read returns exactly
// what ZooKeeper holds.
func TestReadOwnersChurn(t *testing.T) {
	nodes := newOwnerNodes(t)
	s, group := nodes.s, nodes.group
	const parts = 300
	truth := map[int32]string{}
	for p := range int32(parts) {
		nodes.create(p, "a")
		truth[p] = "a"
	}
	stopReading := readUntilStopped(t, func() error {
		_, _, err := readOwners(s, group, []string{"t"})
		return err
	})
	rng := rand.New(rand.NewPCG(1, 2))
	owners := []string{"a", "b", "c", "d"}
	for range 600 {
		p := int32(rng.IntN(parts))
		o := owners[rng.IntN(len(owners))]
		_, has := truth[p]
		switch {
		case !has:
			nodes.create(p, o)
			truth[p] = o
		case rng.IntN(3) == 0:
			nodes.delete(p)
			delete(truth, p)
		case rng.IntN(2) == 0:
			nodes.set(p, o)
			truth[p] = o
		default:
			nodes.delete(p)
			nodes.create(p, o)
			truth[p] = o
		}
	}
	stopReading()
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

// ownerNodes writes a group's owner nodes of topic "t" directly, as other
// members would, and has a session (s) to read them with.
type ownerNodes struct {
	t     *testing.T
	c     *testcluster.Cluster
	zc    *zk.Conn
	s     *zkconn.Session
	group string
}

// newOwnerNodes makes a new group's owners node of topic "t" on the
// shared cluster; the session closes at the test's end.
func newOwnerNodes(t *testing.T) *ownerNodes {
	c := testcluster.Shared(t)
	o := &ownerNodes{t: t, c: c, zc: testcluster.ZooKeeper(t, c), s: dialSession(t, c), group: testcluster.Name(t, "g")}
	t.Cleanup(o.s.Close)
	if err := o.s.CreateParents(zkdata.OwnerTopicPath(o.group, "t")); err != nil {
		t.Fatal(err)
	}
	return o
}

func (o *ownerNodes) path(p int32) string { return o.c.Chroot() + zkdata.OwnerPath(o.group, "t", p) }

// create makes partition p's node, held by owner.
func (o *ownerNodes) create(p int32, owner string) {
	o.t.Helper()
	if _, err := o.zc.Create(o.path(p), zkdata.FormatOwner(owner), 0, zk.WorldACL(zk.PermAll)); err != nil {
		o.t.Fatal(err)
	}
}

// set rewrites partition p's node in place, held by owner.
func (o *ownerNodes) set(p int32, owner string) {
	o.t.Helper()
	if _, err := o.zc.Set(o.path(p), zkdata.FormatOwner(owner), -1); err != nil {
		o.t.Fatal(err)
	}
}

// delete removes partition p's node.
func (o *ownerNodes) delete(p int32) {
	o.t.Helper()
	if err := o.zc.Delete(o.path(p), -1); err != nil {
		o.t.Fatal(err)
	}
}

// readUntilStopped runs read in a loop on a goroutine of its own until the
// returned func is called (which waits for it) or read fails (a test
// error).
func readUntilStopped(t *testing.T, read func() error) (stop func()) {
	t.Helper()
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := read(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	return func() { close(done); <-stopped }
}

package manager

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// countingReader reads through a session and records the paths read.
type countingReader struct {
	s     *zkconn.Session
	mu    sync.Mutex
	paths []string // getData paths, then "ls " + path for children lists
}

func (r *countingReader) GetMany(paths []string) ([]zkconn.NodeData, error) {
	r.mu.Lock()
	r.paths = append(r.paths, paths...)
	r.mu.Unlock()
	return r.s.GetMany(paths)
}

func (r *countingReader) ChildrenMany(paths []string) ([]zkconn.NodeData, error) {
	r.listed(paths)
	return r.s.ChildrenMany(paths)
}

func (r *countingReader) ChildrenStats(paths []string) ([]zkconn.NodeData, error) {
	r.listed(paths)
	return r.s.ChildrenStats(paths)
}

// listed records children lists of paths.
func (r *countingReader) listed(paths []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range paths {
		r.paths = append(r.paths, "ls "+p)
	}
}

// take returns the paths read since the last call, sorted, without the
// group's prefix.
func (r *countingReader) take(group string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.paths))
	for i, p := range r.paths {
		out[i] = strings.ReplaceAll(p, zkdata.OwnersPath(group)+"/", "")
	}
	r.paths = nil
	slices.Sort(out)
	return out
}

// ownersMap is every owner of v by partition.
func ownersMap(v ownersView) map[TopicPartition]string {
	out := map[TopicPartition]string{}
	for t, e := range v {
		for p, o := range e.kids.partitions() {
			out[TopicPartition{Topic: t, Partition: p}] = o
		}
	}
	return out
}

// ownersFixture is a group's owner nodes, written by a session of its own.
type ownersFixture struct {
	t     *testing.T
	zc    *zk.Conn
	c     *testcluster.Cluster
	group string
	truth map[TopicPartition]string
	// counts: the partition counts the reads pass (nil: none, so that
	// every node is kept as a stray one, not in a slot).
	counts map[string]int
}

// newOwnersFixture returns a fixture on the shared cluster, with a group
// of its own, and a member session closed at the end of the test.
func newOwnersFixture(t *testing.T) (*ownersFixture, *zkconn.Session) {
	c := testcluster.Shared(t)
	f := &ownersFixture{t: t, zc: testcluster.ZooKeeper(t, c), c: c, group: testcluster.Name(t, "g"),
		truth: map[TopicPartition]string{}}
	s := dialSession(t, c)
	t.Cleanup(func() { s.Close() })
	return f, s
}

func (f *ownersFixture) full(tp TopicPartition) string {
	return f.c.Chroot() + zkdata.OwnerPath(f.group, tp.Topic, tp.Partition)
}

func (f *ownersFixture) create(tp TopicPartition, owner string) {
	f.t.Helper()
	if _, err := f.zc.Create(f.full(tp), zkdata.FormatOwner(owner), 0, zk.WorldACL(zk.PermAll)); err != nil {
		f.t.Fatal(err)
	}
	f.truth[tp] = owner
}

func (f *ownersFixture) delete(tp TopicPartition) {
	f.t.Helper()
	if err := f.zc.Delete(f.full(tp), -1); err != nil {
		f.t.Fatal(err)
	}
	delete(f.truth, tp)
}

// check reads through oc and compares with the truth and the paths read
// (nil: not compared).
func (f *ownersFixture) check(oc *ownersCache, r *countingReader, topics []string, epoch uint64, wantRead []string) {
	f.t.Helper()
	view, noDir, err := oc.read(r, f.group, topics, epoch, f.counts)
	if err != nil {
		f.t.Fatal(err)
	}
	got := ownersMap(view)
	if len(noDir) != 0 {
		f.t.Errorf("topics without owners node: %v", noDir)
	}
	if !maps.Equal(got, f.truth) {
		f.t.Errorf("owners %v, want %v", got, f.truth)
	}
	read := r.take(f.group)
	if wantRead != nil {
		slices.Sort(wantRead)
		if !slices.Equal(read, wantRead) {
			f.t.Errorf("read %q, want %q", read, wantRead)
		}
	}
	if n := oc.lastNodesRead(); n != len(read) {
		f.t.Errorf("lastNodesRead %d, %d paths read", n, len(read))
	}
}

// TestOwnersCacheReadsChanges: through the cache, a read fetches every
// owner node once; then only the stats of the topics' owners nodes while
// nothing changes; the list and the new nodes of a topic where a partition
// was claimed or released; the node of a partition moved as the last
// assignment said; and every node of a topic where a node was deleted and
// created again with another owner unannounced (the Cversion counts more
// changes than the list shows), whose new owner is returned; only the node
// of such a change when a claim found it held (recheck). A new session
// and another partition count make it read in full.
func TestOwnersCacheReadsChanges(t *testing.T) {
	f, s := newOwnersFixture(t)
	r := &countingReader{s: s}
	topics := []string{"t0", "t1", "t2", "t3"}
	const parts = 6
	// Partitions 0 to 5 have slots; a node of partition 6 is beyond the
	// count.
	f.counts = map[string]int{"t0": parts, "t1": parts, "t2": parts, "t3": parts}
	var all []string
	for _, tn := range topics {
		if err := s.CreateParents(zkdata.OwnerTopicPath(f.group, tn)); err != nil {
			t.Fatal(err)
		}
		all = append(all, tn, "ls "+tn)
		for p := range int32(parts) {
			f.create(TopicPartition{Topic: tn, Partition: p}, "a")
			all = append(all, fmt.Sprintf("%s/%d", tn, p))
		}
	}
	var oc ownersCache
	expect := func(moves map[TopicPartition]string) {
		want := maps.Clone(f.truth)
		maps.Copy(want, moves)
		oc.expectOwners(newOwnerTable(maps.All(want)))
	}

	f.check(&oc, r, topics, 1, all) // the first read: everything
	expect(nil)                     // as an assignment that moves nothing
	f.check(&oc, r, topics, 1, topics)

	// t1 gains a partition, t2 loses one.
	f.create(TopicPartition{Topic: "t1", Partition: parts}, "b")
	f.delete(TopicPartition{Topic: "t2", Partition: 3})
	f.check(&oc, r, topics, 1, append(slices.Clone(topics), "ls t1", "ls t2", fmt.Sprintf("t1/%d", parts)))

	// t0/5 moves from a to b, as the assignment said.
	tp := TopicPartition{Topic: "t0", Partition: 5}
	expect(map[TopicPartition]string{tp: "b"})
	f.delete(tp)
	f.create(tp, "b")
	f.check(&oc, r, topics, 1, append(slices.Clone(topics), "ls t0", "t0/5"))

	// Unannounced in t3: 2 moves from a to c (a delete and a create of
	// the same name), 0 is released and 6 claimed: four changes where
	// the list shows two. The node of 6 is read, then every other.
	expect(nil)
	moved := TopicPartition{Topic: "t3", Partition: 2}
	f.delete(moved)
	f.create(moved, "c")
	f.delete(TopicPartition{Topic: "t3", Partition: 0})
	f.create(TopicPartition{Topic: "t3", Partition: parts}, "c")
	want := append(slices.Clone(topics), "ls t3", fmt.Sprintf("t3/%d", parts))
	for _, p := range []int{1, 2, 3, 4, 5} {
		want = append(want, fmt.Sprintf("t3/%d", p))
	}
	f.check(&oc, r, topics, 1, want)
	f.check(&oc, r, topics, 1, topics) // and kept

	// A claim of t2/4 found it held: while t2 is unchanged nothing but
	// the stats is read. Then t2/4 moves from a to c unannounced (two
	// changes the list does not show): its node is read, which accounts
	// for both, and nothing else of t2.
	oc.recheck(TopicPartition{Topic: "t2", Partition: 4})
	f.check(&oc, r, topics, 1, topics)
	held := TopicPartition{Topic: "t2", Partition: 4}
	f.delete(held)
	f.create(held, "c")
	oc.recheck(held)
	f.check(&oc, r, topics, 1, append(slices.Clone(topics), "ls t2", "t2/4"))
	f.check(&oc, r, topics, 1, topics)

	// A new session: everything again.
	want = slices.Clone(topics)
	for _, tn := range topics {
		want = append(want, "ls "+tn)
	}
	for tp := range f.truth {
		want = append(want, fmt.Sprintf("%s/%d", tp.Topic, tp.Partition))
	}
	f.check(&oc, r, topics, 2, want)
	f.check(&oc, r, topics, 2, topics)

	// Another partition count: everything again.
	if _, _, err := oc.read(r, f.group, topics, 2, map[string]int{"t0": 7, "t1": parts, "t2": parts, "t3": parts}); err != nil {
		t.Fatal(err)
	}
	if got := r.take(f.group); !slices.Equal(got, want) {
		t.Errorf("after a partition count change: read %q, want %q", got, want)
	}
}

// TestOwnersCacheUnowned: unowned returns the partitions of each topic
// (0 to its count - 1) that have no node, every partition of a topic
// without owners node, and a node that is not a partition's counts for
// none; while nothing changed it reads the owners nodes' stats alone,
// and a release or a claim is seen at the next check (the list and the
// new node of the changed topic). A read after it reads only the stats.
func TestOwnersCacheUnowned(t *testing.T) {
	f, s := newOwnersFixture(t)
	r := &countingReader{s: s}
	tps := func(pairs ...any) []TopicPartition {
		var out []TopicPartition
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, TopicPartition{Topic: pairs[i].(string), Partition: int32(pairs[i+1].(int))})
		}
		return out
	}
	topics := []string{"t0", "t1", "t2"} // t2: no owners node
	counts := map[string]int{"t0": 4, "t1": 3, "t2": 2}
	for _, tn := range topics[:2] {
		if err := s.CreateParents(zkdata.OwnerTopicPath(f.group, tn)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tp := range tps("t0", 0, "t0", 2, "t1", 0, "t1", 1, "t1", 2) {
		f.create(tp, "a")
	}
	if _, err := f.zc.Create(f.c.Chroot()+zkdata.OwnerTopicPath(f.group, "t0")+"/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var oc ownersCache
	check := func(want []TopicPartition, wantRead []string) {
		t.Helper()
		got, err := oc.unowned(r, f.group, topics, 1, counts)
		checkUnowned(t, r, f.group, got, err, want, wantRead)
	}
	check(tps("t0", 1, "t0", 3, "t2", 0, "t2", 1), nil) // the first: everything
	oc.expectOwners(newOwnerTable(maps.All(f.truth)))   // as an assignment that moves nothing
	check(tps("t0", 1, "t0", 3, "t2", 0, "t2", 1), topics)

	f.delete(TopicPartition{Topic: "t1", Partition: 1})
	f.create(TopicPartition{Topic: "t0", Partition: 3}, "b")
	check(tps("t0", 1, "t1", 1, "t2", 0, "t2", 1), append(slices.Clone(topics), "ls t0", "ls t1", "t0/3"))
	check(tps("t0", 1, "t1", 1, "t2", 0, "t2", 1), topics)

	// What the checks read serves the rebalance's read.
	if _, _, err := oc.read(r, f.group, topics, 1, counts); err != nil {
		t.Fatal(err)
	}
	if got := r.take(f.group); !slices.Equal(got, topics) {
		t.Errorf("read after the checks: %q, want %q", got, topics)
	}
}

// checkUnowned compares an unowned check's result with want, and the
// paths r read since the last take with wantRead (nil: not compared).
func checkUnowned(t *testing.T, r *countingReader, group string, got []TopicPartition, err error,
	want []TopicPartition, wantRead []string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("unowned %v, want %v", got, want)
	}
	read := r.take(group)
	slices.Sort(wantRead)
	if wantRead != nil && !slices.Equal(read, wantRead) {
		t.Errorf("read %q, want %q", read, wantRead)
	}
}

// TestOwnersCacheNoDir: a topic without owners node is listed apart, and
// once its owners node exists its owners are read.
func TestOwnersCacheNoDir(t *testing.T) {
	f, s := newOwnersFixture(t)
	r := &countingReader{s: s}
	var oc ownersCache
	for range 2 {
		_, noDir, err := oc.read(r, f.group, []string{"t", "u"}, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(noDir, []string{"t", "u"}) {
			t.Errorf("topics without owners node %v, want [t u]", noDir)
		}
	}
	if err := s.CreateParents(zkdata.OwnerTopicPath(f.group, "u")); err != nil {
		t.Fatal(err)
	}
	f.create(TopicPartition{Topic: "u", Partition: 0}, "a")
	view, noDir, err := oc.read(r, f.group, []string{"t", "u"}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ownersMap(view); !slices.Equal(noDir, []string{"t"}) || !maps.Equal(got, f.truth) {
		t.Errorf("owners %v and no owners node %v, want %v and [t]", got, noDir, f.truth)
	}
}

// TestOwnersCacheChurn: while another session claims, releases and moves
// owner nodes at random, and the expected owners given to the cache are
// right or wrong at random, reads through the cache go on without error;
// once the churn stops a read returns exactly what ZooKeeper holds, and
// the read after it only the owners nodes' stats.
func TestOwnersCacheChurn(t *testing.T) {
	f, s := newOwnersFixture(t)
	topics := []string{"t0", "t1", "t2"}
	const parts = 100
	// Slots for every node of t0, half of t1's, none of t2's.
	f.counts = map[string]int{"t0": parts, "t1": parts / 2}
	for _, tn := range topics {
		if err := s.CreateParents(zkdata.OwnerTopicPath(f.group, tn)); err != nil {
			t.Fatal(err)
		}
		for p := range int32(parts) {
			f.create(TopicPartition{Topic: tn, Partition: p}, "a")
		}
	}
	var oc ownersCache
	r := &countingReader{s: s}
	owners := []string{"a", "b", "c", "d"}
	var (
		mu      sync.Mutex
		guesses = map[TopicPartition]string{} // what the expected owners say
	)
	stopReading := readUntilStopped(t, func() error {
		mu.Lock()
		oc.expectOwners(newOwnerTable(maps.All(guesses)))
		mu.Unlock()
		_, _, err := oc.read(r, f.group, topics, 1, f.counts)
		r.take(f.group)
		return err
	})
	rng := rand.New(rand.NewPCG(3, 4))
	for range 900 {
		tp := TopicPartition{Topic: topics[rng.IntN(len(topics))], Partition: int32(rng.IntN(parts))}
		o := owners[rng.IntN(len(owners))]
		_, has := f.truth[tp]
		switch {
		case !has:
			f.create(tp, o)
		case rng.IntN(3) == 0:
			f.delete(tp)
		default: // a move
			f.delete(tp)
			f.create(tp, o)
		}
		mu.Lock()
		if rng.IntN(2) == 0 {
			guesses[tp] = f.truth[tp]
		} else {
			guesses[tp] = owners[rng.IntN(len(owners))]
		}
		mu.Unlock()
	}
	stopReading()
	f.check(&oc, r, topics, 1, nil)
	f.check(&oc, r, topics, 1, topics)
}

// TestOwnersNodeCversion: what the cache relies on, on this ZooKeeper:
// every create and delete of a child bumps its parent's Cversion by one,
// the delete of an ephemeral node when its session closes included.
func TestOwnersNodeCversion(t *testing.T) {
	c := testcluster.Shared(t)
	zc := testcluster.ZooKeeper(t, c)
	other := testcluster.ZooKeeper(t, c)
	path := zkdata.OwnerTopicPath(testcluster.Name(t, "g"), "t")
	dir := c.Chroot() + path
	s := dialSession(t, c)
	defer s.Close()
	if err := s.CreateParents(path); err != nil {
		t.Fatal(err)
	}
	cversion := func() int32 {
		t.Helper()
		_, st, err := zc.Get(dir)
		if err != nil {
			t.Fatal(err)
		}
		return st.Cversion
	}
	v0 := cversion()
	for i, conn := range []*zk.Conn{zc, other} {
		if _, err := conn.Create(fmt.Sprintf("%s/%d", dir, i), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zc.Delete(dir+"/0", -1); err != nil {
		t.Fatal(err)
	}
	other.Close() // its node goes with its session
	testcluster.Await(t, 10*time.Second, 10*time.Millisecond, "the closed session's node to go", func() bool {
		ok, _, err := zc.Exists(dir + "/1")
		return err == nil && !ok
	})
	if got := cversion(); got != v0+4 {
		t.Errorf("Cversion %d after two creates and two deletes (one by a session's end), want %d", got, v0+4)
	}
}

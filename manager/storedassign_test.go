package manager_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// TestStoredAssignment: the oldest member stores the group's assignment
// in /consumers/<group>/assignment, and members compute from it rather
// than from the owner nodes: a member joining moves exactly its share; an
// assignment planted with the node's digest is taken as it is (nobody
// read the owners); a malformed node is ignored (members compute from
// the owners, nothing moves) and the oldest member writes it again; when
// the writer leaves, the next oldest writes it. No partition has two
// holders throughout.
func TestStoredAssignment(t *testing.T) {
	const parts = 12
	c := testcluster.Shared(t)
	topic, group, sub := newTopic(t, c, parts)
	rec := newRecorder(t)
	conn := testcluster.ZooKeeper(t, c)
	path := c.Chroot() + zkdata.AssignmentPath(group)

	// stored reads the node (ok false while it is missing or malformed).
	stored := func() (zkdata.GroupAssignment, int32, bool) {
		data, st, err := conn.Get(path)
		if err != nil {
			return zkdata.GroupAssignment{}, 0, false
		}
		a, err := zkdata.ParseGroupAssignment(data)
		return a, st.Version, err == nil
	}
	// holders maps each partition to the instance fetching it.
	holders := func(ins ...*instance) map[int32]string {
		out := map[int32]string{}
		for _, in := range ins {
			for _, p := range in.c.Stats().Partitions {
				out[p.Partition] = in.c.ID()
			}
		}
		return out
	}
	// settled: balanced, and the node stores who fetches what, for these
	// members.
	settled := func(ins ...*instance) bool {
		a, _, ok := stored()
		if !ok || !balanced(parts, ins...) || len(a.Members) != len(ins) {
			return false
		}
		h := holders(ins...)
		for p := range int32(parts) {
			if a.Owner(topic, p) != h[p] {
				return false
			}
		}
		return true
	}

	a := join(t, c, group, sub, "a", rec, joinOpts{})
	await(t, 60*time.Second, "a alone", func() bool { return settled(a) })
	b := join(t, c, group, sub, "b", rec, joinOpts{})
	await(t, 60*time.Second, "a and b settled, stored", func() bool { return settled(a, b) })
	before := holders(a, b)

	cc := join(t, c, group, sub, "c", rec, joinOpts{})
	await(t, 60*time.Second, "a, b and c settled, stored", func() bool { return settled(a, b, cc) })
	after := holders(a, b, cc)
	moved := 0
	for p := range int32(parts) {
		if before[p] != after[p] {
			moved++
			if after[p] != cc.c.ID() {
				t.Errorf("partition %d moved from %s to %s, not to the new member", p, before[p], after[p])
			}
		}
	}
	if moved != parts/3 {
		t.Errorf("the third member's join moved %d partitions, want %d", moved, parts/3)
	}

	// Planted: two partitions of different members swapped, with the
	// node's digest. Members follow it without reading the owners.
	cur, version, _ := stored()
	planted := cur
	planted.Topics = maps.Clone(cur.Topics)
	ps := slices.Clone(cur.Topics[topic])
	i := slices.IndexFunc(ps, func(m int32) bool { return m != ps[0] })
	ps[0], ps[i] = ps[i], ps[0]
	planted.Topics[topic] = ps
	data, err := planted.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(path, data, version); err != nil {
		t.Fatal(err)
	}
	await(t, 60*time.Second, "the planted assignment applied", func() bool {
		if !balanced(parts, a, b, cc) {
			return false
		}
		h := holders(a, b, cc)
		for p := range int32(parts) {
			if h[p] != planted.Owner(topic, p) {
				return false
			}
		}
		return true
	})
	// Taken as it is: the writer had nothing to write.
	if now, _, ok := stored(); !ok || now.Owner(topic, 0) != planted.Owner(topic, 0) {
		t.Errorf("the node changed after the planted assignment: %+v", now)
	}

	// Malformed: ignored, nothing moves, written again.
	want := holders(a, b, cc)
	_, version, _ = stored()
	if _, err := conn.Set(path, []byte("not json"), version); err != nil {
		t.Fatal(err)
	}
	await(t, 60*time.Second, "the node written again", func() bool { return settled(a, b, cc) })
	if got := holders(a, b, cc); !maps.Equal(got, want) {
		t.Errorf("a malformed assignment node moved partitions: %v, was %v", got, want)
	}
	for _, in := range []*instance{a, b, cc} {
		if n := in.c.Stats().RebalancesByCause[manager.CauseAssignment]; n == 0 {
			t.Errorf("%s: no rebalance for a changed assignment node", in.name)
		}
	}

	// The writer leaves: the next oldest writes the node for the two
	// left, and only the leaver's partitions moved.
	kept := holders(b, cc)
	a.close(t)
	await(t, 60*time.Second, "b and c settled, stored by b", func() bool { return settled(b, cc) })
	for p, id := range kept {
		if now := holders(b, cc)[p]; now != id {
			t.Errorf("partition %d moved from %s to %s when a left", p, id, now)
		}
	}
	rec.checkViolations(t)
}

// TestStoredAssignmentOlderMember: a member that does not publish
// zkgroup_assignment (an older zkgroup) makes every member compute from
// the owner nodes: nobody writes the node, and the group still balances.
func TestStoredAssignmentOlderMember(t *testing.T) {
	const parts = 6
	f := newStoredFixture(t, parts)
	c, topic, group, sub, rec, conn, root := f.c, f.topic, f.group, f.sub, f.rec, f.conn, f.root
	// An older zkgroup's registration, holding nothing (it would compute
	// Balanced too; here it only has to be there).
	old := fmt.Sprintf(`{"version":1,"subscription":{%q:1},"pattern":"static","timestamp":"1","zkgroup_strategy":"balanced"}`, topic)
	leave := plantMember(t, conn, root, "older", old)
	a := join(t, c, group, sub, "a", rec, joinOpts{})
	b := join(t, c, group, sub, "b", rec, joinOpts{})
	// The older member claims nothing: a and b hold 2 each, 2 stay for it.
	await(t, 60*time.Second, "a and b hold their shares", func() bool {
		return len(a.c.Stats().Partitions) == 2 && len(b.c.Stats().Partitions) == 2
	})
	checkNotStored(t, conn, root, "with an older member in the group")
	leave()
	awaitStored(t, conn, root, parts, a, b)
	rec.checkViolations(t)
}

// plantMember registers name in the group at root from the test's own
// ZooKeeper session with the registration reg: a member that claims
// nothing. leave deletes it.
func plantMember(t *testing.T, conn *zk.Conn, root, name, reg string) (leave func()) {
	t.Helper()
	mkdirs(t, conn, root+"/ids")
	if _, err := conn.Create(root+"/ids/"+name, []byte(reg), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := conn.Delete(root+"/ids/"+name, -1); err != nil {
			t.Fatal(err)
		}
	}
}

// checkNotStored fails the test when the group's assignment node at root
// exists (written when, says why, it must not be).
func checkNotStored(t *testing.T, conn *zk.Conn, root, why string) {
	t.Helper()
	if ok, _, err := conn.Exists(root + "/assignment"); err != nil || ok {
		t.Errorf("assignment node written %s (exists %v, %v)", why, ok, err)
	}
}

// awaitStored waits for ins to be balanced over parts partitions with
// the group's assignment node at root written.
func awaitStored(t *testing.T, conn *zk.Conn, root string, parts int, ins ...*instance) {
	t.Helper()
	await(t, 60*time.Second, "balanced, the assignment node written", func() bool {
		ok, _, _ := conn.Exists(root + "/assignment")
		return ok && balanced(parts, ins...)
	})
}

// TestFirstAssignmentWaitsForWriter: a new member whose group's writer
// (its oldest member) has not stored an assignment since it registered
// does not compute from the owners at once: members started together
// would each decide from their own view. It waits for the writer's node,
// and computes on its own once SessionTimeout passed without one: here
// the writer is a registration that never writes.
func TestFirstAssignmentWaitsForWriter(t *testing.T) {
	const parts = 6
	f := newStoredFixture(t, parts)
	c, topic, group, sub, rec, conn, root := f.c, f.topic, f.group, f.sub, f.rec, f.conn, f.root
	leave := plantMember(t, conn, root, "silent", followerRegistration(topic))
	const wait = manager.MinSessionTimeout
	began := time.Now()
	a := join(t, c, group, sub, "a", rec, joinOpts{configure: func(cfg *manager.Config) { cfg.SessionTimeout = wait }})
	await(t, 60*time.Second, "a holding its share", func() bool { return len(a.c.Stats().Partitions) == parts/2 })
	checkWaited(t, "a held its share after joining", began, wait)
	checkNotStored(t, conn, root, "by a member that is not the writer")
	// The silent writer goes: a is the writer now, and stores it.
	leave()
	awaitStored(t, conn, root, parts, a)
	rec.checkViolations(t)
}

// TestLaterPlanWaitsForWriter: a member that is not the writer and reads
// a node stored from another view than its own waits for the writer to
// store the assignment of its view, at most ClaimWaitCheck, instead of
// placing partitions by its own view at once (members whose views change
// at different moments of a rolling leave passed partitions from one to
// another). The writer here is a registration whose node the test writes
// with a digest of no view: each wait ends at ClaimWaitCheck.
func TestLaterPlanWaitsForWriter(t *testing.T) {
	const parts = 6
	f := newStoredFixture(t, parts)
	c, topic, group, sub, rec, conn, root := f.c, f.topic, f.group, f.sub, f.rec, f.conn, f.root
	reg := followerRegistration(topic)
	plantMember(t, conn, root, "writer", reg)
	// A node written after the writer registered (fresh), of no view.
	store := func(owner string) {
		t.Helper()
		row := make([]int32, parts)
		data, err := zkdata.GroupAssignment{Digest: "of-no-view", Members: []string{owner}, Topics: map[string][]int32{topic: row}}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Set(root+"/assignment", data, -1); errors.Is(err, zk.ErrNoNode) {
			_, err = conn.Create(root+"/assignment", data, 0, zk.WorldACL(zk.PermAll))
			if err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
	}
	store("writer")
	const wait = 3 * time.Second
	began := time.Now()
	a := join(t, c, group, sub, "a", rec, joinOpts{configure: func(cfg *manager.Config) { cfg.ClaimWaitCheck = wait }})
	await(t, 60*time.Second, "a holding its share", func() bool { return len(a.c.Stats().Partitions) == parts/2 })
	checkWaited(t, "a held its share after joining", began, wait)
	// The writer stores again, still of no view, and a member joins: a
	// waits for the writer again before it gives the newcomer anything.
	before := a.c.Stats().Rebalances
	store("writer")
	rewritten := time.Now()
	plantMember(t, conn, root, "x", reg)
	await(t, 60*time.Second, "a rebalanced with x", func() bool {
		return a.c.Stats().Rebalances > before && len(a.c.Stats().Partitions) == parts/3
	})
	checkWaited(t, "a rebalanced after the writer's node changed", rewritten, wait)
	rec.checkViolations(t)
}

// followerRegistration is the registration of a zkgroup member of topic
// that follows the group's assignment node (and writes it when oldest).
func followerRegistration(topic string) string {
	return fmt.Sprintf(`{"version":1,"subscription":{%q:1},"pattern":"static","timestamp":"1","zkgroup_strategy":"balanced","zkgroup_assignment":%d}`,
		topic, zkdata.GroupAssignmentVersion)
}

// checkWaited fails t when what happened less than wait after since: the
// member did not wait for the writer.
func checkWaited(t *testing.T, what string, since time.Time, wait time.Duration) {
	t.Helper()
	if took := time.Since(since); took < wait {
		t.Errorf("%s %v later, before the wait for the writer (%v) ended: it did not wait", what, took, wait)
	}
}

// storedFixture is a test's topic and group on the shared cluster, with
// a recorder, the test's own ZooKeeper connection and the group's path
// in it (root).
type storedFixture struct {
	c                  *testcluster.Cluster
	topic, group, root string
	sub                *subscription.Subscription
	rec                *recorder
	conn               *zk.Conn
}

func newStoredFixture(t *testing.T, parts int32) storedFixture {
	c := testcluster.Shared(t)
	topic, group, sub := newTopic(t, c, parts)
	return storedFixture{c: c, topic: topic, group: group, sub: sub, rec: newRecorder(t),
		conn: testcluster.ZooKeeper(t, c), root: c.Chroot() + "/consumers/" + group}
}

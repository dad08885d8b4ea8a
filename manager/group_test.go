package manager_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// TestGroupJoinLeave: 3 instances over 24 partitions join and leave one by
// one while a producer writes. After each step every partition is owned by
// exactly one instance and fetching; no two instances ever hold a partition
// at once; every message is consumed exactly once (clean rebalances and
// clean leaves redeliver nothing), and the committed offsets end at the
// log-end offsets.
func TestGroupJoinLeave(t *testing.T) {
	groupJoinLeave(t, joinOpts{strict: true, shuffle: true, ackDelay: 200 * time.Microsecond})
}

// groupJoinLeave runs TestGroupJoinLeave's steps with members joined with
// o (receiving from Each, or from Messages).
func groupJoinLeave(t *testing.T, o joinOpts) {
	c := testcluster.Shared(t)
	const parts = 24
	topic, group, sub := newTopic(t, c, parts)
	testcluster.MustProduce(t, c, topic, parts, 0, 2400)
	rec := newRecorder(t)
	prod := testcluster.StartProducer(t, c, topic, parts, 2400, 48, 50*time.Millisecond)

	a := join(t, c, group, sub, "a", rec, o)
	t.Logf("a alone: ready in %v", await(t, 60*time.Second, "a owning 24", func() bool { return balanced(parts, a) }))
	await(t, 60*time.Second, "a consuming", func() bool { return a.c.Stats().Delivered > 0 })
	before := a.c.Stats().Delivered
	b := join(t, c, group, sub, "b", rec, o)
	t.Logf("b joins: balanced in %v", await(t, 60*time.Second, "a, b balanced", func() bool { return balanced(parts, a, b) }))
	if after := a.c.Stats().Delivered; after < before {
		t.Errorf("a's delivered total went from %d to %d over a rebalance; it must only grow", before, after)
	}
	cc := join(t, c, group, sub, "c", rec, o)
	t.Logf("c joins: balanced in %v", await(t, 60*time.Second, "a, b, c balanced", func() bool { return balanced(parts, a, b, cc) }))
	t.Logf("owned: %v", owned(a, b, cc))
	cc.close(t)
	t.Logf("c leaves: balanced in %v", await(t, 60*time.Second, "a, b balanced", func() bool { return balanced(parts, a, b) }))
	b.close(t)
	t.Logf("b leaves: balanced in %v", await(t, 60*time.Second, "a owning 24", func() bool { return balanced(parts, a) }))

	n := prod.Halt(t)
	await(t, 60*time.Second, "every message consumed", func() bool { return rec.Count(topic, n) == n })
	a.close(t)
	rec.CheckExactlyOnce(t, topic, n)
	rec.checkViolations(t)
	testcluster.CheckCommittedAtEnd(t, c, group, topic, parts)
}

// TestFleetStartMovesNothing: 6 members started at once over 60
// partitions (each Join in a goroutine of its own) each take their share
// with their first assignment: no member claims more than its share and
// hands some back on the way to the balanced group. RebalanceDelay is
// longer than the default, so that registrations spread out by a busy
// machine still come within it of each other.
func TestFleetStartMovesNothing(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, members = 60, 6
	_, group, sub := newTopic(t, c, parts)
	rec := newRecorder(t)
	o := joinOpts{strict: true, configure: func(cfg *manager.Config) { cfg.RebalanceDelay = 300 * time.Millisecond }}
	var names []string
	for i := range members {
		names = append(names, "m"+strconv.Itoa(i))
	}
	start := time.Now()
	ins := joinAll(t, c, group, sub, names, rec, o)
	await(t, 60*time.Second, "6 balanced", func() bool { return balanced(parts, ins...) })
	t.Logf("6 members started at once: balanced in %v", time.Since(start))
	for _, in := range ins {
		st := in.c.Stats()
		revoked := 0
		for _, r := range st.History {
			revoked += r.Revoked
		}
		if revoked > 0 || st.Rebalances == 0 {
			t.Errorf("%s: %d partitions revoked over %d rebalances (by cause %v), want none", in.name, revoked, st.Rebalances, st.RebalancesByCause)
		}
	}
	rec.checkViolations(t)
}

// TestRebalanceLatency measures a clean join and a clean leave of a third
// instance beside two others over 24 partitions, from the change to every
// instance fetching all of its partitions, over ZKGROUP_ROUNDS rounds
// (default 3; the figures in the notes use 20).
func TestRebalanceLatency(t *testing.T) {
	c := testcluster.Shared(t)
	const parts = 24
	_, group, sub := newTopic(t, c, parts)
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("ZKGROUP_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	rec := newRecorder(t)
	o := joinOpts{strict: true}
	a := join(t, c, group, sub, "a", rec, o)
	b := join(t, c, group, sub, "b", rec, o)
	await(t, 60*time.Second, "a, b balanced", func() bool { return balanced(parts, a, b) })
	var joins, leaves []time.Duration
	for i := 0; i < rounds; i++ {
		start := time.Now()
		x := join(t, c, group, sub, "x"+strconv.Itoa(i), rec, o)
		await(t, 60*time.Second, "3 balanced", func() bool { return balanced(parts, a, b, x) })
		joins = append(joins, time.Since(start))
		start = time.Now()
		x.close(t)
		await(t, 60*time.Second, "2 balanced", func() bool { return balanced(parts, a, b) })
		leaves = append(leaves, time.Since(start))
	}
	t.Logf("rebalance over %d rounds, 3 instances x 24 partitions: join p50 %v p99 %v; leave p50 %v p99 %v",
		rounds, percentile(joins, 0.5), percentile(joins, 0.99), percentile(leaves, 0.5), percentile(leaves, 0.99))
	rec.checkViolations(t)
}

// TestCoordinationOnlyZooKeeper: with an explicit broker list and a
// ZooKeeper chroot that holds no Kafka cluster, ZooKeeper serves as the
// coordination store alone and the topics are learnt from Kafka.
func TestCoordinationOnlyZooKeeper(t *testing.T) {
	c := testcluster.Shared(t)
	const parts = 6
	topic, group, sub := newTopicRF(t, c, parts, 1)
	testcluster.MustProduce(t, c, topic, parts, 0, 300)
	rec := newRecorder(t)
	o := joinOpts{
		strict:    true,
		zk:        c.ZooKeeperAddr() + "/coordination-" + group,
		configure: func(cfg *manager.Config) { cfg.Brokers = c.Addrs(); cfg.MetadataPoll = 200 * time.Millisecond },
	}
	a := join(t, c, group, sub, "a", rec, o)
	b := join(t, c, group, sub, "b", rec, o)
	await(t, 60*time.Second, "a, b balanced", func() bool { return balanced(parts, a, b) })
	await(t, 60*time.Second, "every message consumed", func() bool { return rec.Count(topic, 300) == 300 })
	rec.CheckExactlyOnce(t, topic, 300)
	rec.checkViolations(t)
}

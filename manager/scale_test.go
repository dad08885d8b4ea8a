package manager_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// TestScaleConvergence: 10 members join a group over a topic of 1,000
// partitions one after another, then 9 leave one by one, while a producer
// writes throughout. After each step the members own every partition
// exactly once, balanced within one, and fetch all of it; at the end the
// last member has consumed every message exactly once (clean joins and
// leaves redeliver nothing), no two members ever held a partition at once,
// and the committed offsets are the log-end offsets. The deadlines are
// generous: this asserts convergence and ownership, not speed (the scale
// benchmark in bench/ measures that).
func TestScaleConvergence(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, members = 1000, 10
	topic, group, sub := newTopicRF(t, c, parts, 1)
	rec := newRecorder(t)
	prod := testcluster.StartProducer(t, c, topic, parts, 0, 1000, 250*time.Millisecond)
	o := joinOpts{strict: true, configure: func(cfg *manager.Config) {
		cfg.Partition.CommitInterval = time.Second
	}}
	var ins []*instance
	for i := range members {
		ins = append(ins, join(t, c, group, sub, fmt.Sprintf("m%02d", i), rec, o))
		took := await(t, 3*time.Minute, fmt.Sprintf("%d members balanced", len(ins)), func() bool { return balanced(parts, ins...) })
		t.Logf("join %d: balanced in %v", len(ins), took)
	}
	for len(ins) > 1 {
		ins[0].close(t)
		ins = ins[1:]
		took := await(t, 3*time.Minute, fmt.Sprintf("%d members balanced", len(ins)), func() bool { return balanced(parts, ins...) })
		t.Logf("leave, %d left: balanced in %v", len(ins), took)
	}
	last := ins[0]
	n := prod.Halt(t)
	await(t, 3*time.Minute, "every message consumed", func() bool { return rec.Count(topic, n) == n })
	st := last.c.Stats()
	t.Logf("last member: %d rebalances by cause %v, %d partition restarts", st.Rebalances, st.RebalancesByCause, st.PartitionRestarts)
	last.close(t)
	rec.CheckExactlyOnce(t, topic, n)
	rec.checkViolations(t)
	testcluster.CheckCommittedAtEnd(t, c, group, topic, parts)
}

// TestRollingBrokerRestart: 3 members over 24 partitions (replication 3)
// while each broker in turn is stopped (the first one killed) and started
// again under load. A
// leader change is not a group change: no member recomputes its assignment
// for it, nothing moves between members, and every message is consumed
// exactly once.
func TestRollingBrokerRestart(t *testing.T) {
	c := testcluster.Start(t, testcluster.Brokers(3))
	ctx := context.Background()
	const parts = 24
	topic, group, sub := newTopic(t, c, parts)
	rec := newRecorder(t)
	prod := testcluster.StartProducer(t, c, topic, parts, 0, 48, 100*time.Millisecond)
	o := joinOpts{strict: true}
	ins := []*instance{
		join(t, c, group, sub, "a", rec, o),
		join(t, c, group, sub, "b", rec, o),
		join(t, c, group, sub, "c", rec, o),
	}
	await(t, 60*time.Second, "3 balanced", func() bool { return balanced(parts, ins...) })
	before := map[string]manager.Stats{}
	for _, in := range ins {
		before[in.name] = in.c.Stats()
	}
	for i, id := range c.BrokerIDs() {
		stop, how := c.StopBroker, "stopping"
		if i == 0 {
			stop, how = c.KillBroker, "killing" // no controlled shutdown: its leaderships just vanish
		}
		if err := stop(id); err != nil {
			t.Fatalf("%s broker %d: %v", how, id, err)
		}
		if err := c.StartBroker(ctx, id); err != nil {
			t.Fatalf("starting broker %d: %v", id, err)
		}
		if err := c.WaitReady(ctx); err != nil {
			t.Fatalf("cluster after restarting broker %d: %v", id, err)
		}
		t.Logf("broker %d restarted", id)
	}
	n := prod.Halt(t)
	await(t, 2*time.Minute, "every message consumed", func() bool { return rec.Count(topic, n) == n })
	for _, in := range ins {
		b, a := before[in.name], in.c.Stats()
		// A claim that waited on a peer's since the start (under load the
		// first claims of three members joining at once can take
		// ClaimWaitCheck) may read the owners again meanwhile; nothing
		// of the brokers' changes the members, the partitions or the
		// session, which are what a rebalance follows.
		for cause, n := range a.RebalancesByCause {
			if cause != manager.CauseClaimWait && n != b.RebalancesByCause[cause] {
				t.Errorf("%s recomputed its assignment for %q %d times during the broker restarts (causes before %v, after %v)",
					in.name, cause, n-b.RebalancesByCause[cause], b.RebalancesByCause, a.RebalancesByCause)
			}
		}
		if fmt.Sprint(a.Assigned) != fmt.Sprint(b.Assigned) {
			t.Errorf("%s's partitions changed: %v -> %v", in.name, b.Assigned, a.Assigned)
		}
	}
	for _, in := range ins {
		in.close(t)
	}
	rec.CheckExactlyOnce(t, topic, n)
	rec.checkViolations(t)
}

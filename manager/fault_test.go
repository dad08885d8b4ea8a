package manager_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// offsetWatch samples the group's committed offsets and records any that
// moved backwards.
type offsetWatch struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	back []string
}

func watchOffsets(t *testing.T, c *testcluster.Cluster, group, topic string, parts int32) *offsetWatch {
	w := &offsetWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		last := map[int32]int64{}
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			got, err := c.CommittedOffsets(context.Background(), group, topic, parts)
			if err != nil {
				continue // the cluster may be restarting
			}
			w.mu.Lock()
			for p, off := range got {
				if prev, ok := last[p]; ok && off < prev {
					w.back = append(w.back, topic+"/"+itoa(int(p))+": "+itoa(int(last[p]))+" -> "+itoa(int(off)))
				}
				if prev, ok := last[p]; !ok || off > prev {
					last[p] = off
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *offsetWatch) check(t *testing.T) {
	close(w.stop)
	<-w.done
	for _, b := range w.back {
		t.Errorf("committed offset moved backwards: %s", b)
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	neg := i < 0
	if neg {
		i = -i
	}
	var b []byte
	for i > 0 {
		b = append([]byte{digits[i%10]}, b...)
		i /= 10
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

// TestGroupFaults runs 3 instances over 24 partitions of a whitelist
// subscription, each with its ZooKeeper connection through its own fault
// proxy, through: a crash (c's connection cut for good), a session expiry
// (b's connection stalled past the session timeout), a new topic matching
// the whitelist, a raised partition count, and a ZooKeeper restart. After
// each step every partition is owned by exactly one instance and fetching,
// nothing is handed out by a suspended instance, committed offsets never
// move backwards, and no message is lost.
func TestGroupFaults(t *testing.T) {
	c := testcluster.Start(t, testcluster.Brokers(1))
	ctx := context.Background()
	prefix := testcluster.Name(t, "w")
	topic, group := prefix+"-a", testcluster.Name(t, "g")
	const parts = 24
	createTopic(t, c, topic, parts, 1)
	sub, err := subscription.Whitelist(prefix + "-.*")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t)
	ins, proxies := joinProxied(t, c, group, sub, rec, []string{"a", "b", "c"}, func(string) joinOpts { return joinOpts{shuffle: true} })
	a, b, cc := ins[0], ins[1], ins[2]
	await(t, 60*time.Second, "3 balanced", func() bool { return balanced(parts, a, b, cc) })
	ow := watchOffsets(t, c, group, topic, parts)
	prod := testcluster.StartProducer(t, c, topic, parts, 0, 48, 50*time.Millisecond)
	const session = 6 * time.Second

	// A crash: c's ZooKeeper connection is cut and never comes back; its
	// session expires on the server and a, b take over its partitions.
	start := time.Now()
	proxies["c"].Block()
	took := await(t, 60*time.Second, "a, b take over from c", func() bool { return balanced(parts, a, b) })
	t.Logf("crash of c (session %v): a and b own every partition after %v", session, took)
	if got := cc.c.Stats().SessionHealthy; got {
		t.Errorf("c reports a healthy session %v after its connection was cut", time.Since(start))
	}
	before := rec.By("c")
	time.Sleep(time.Second) // observation window: c must hand out nothing while cut off
	if after := rec.By("c"); after != before {
		t.Errorf("c handed out %d messages while its session was suspended", after-before)
	}
	proxies["c"].Unblock()
	took = await(t, 60*time.Second, "c back", func() bool { return balanced(parts, a, b, cc) })
	t.Logf("c reconnected (new session) and the group rebalanced to 3 after %v", took)

	// A session expiry: b's connection is stalled past the session timeout.
	proxies["b"].Stall()
	took = await(t, 60*time.Second, "a, c take over from b", func() bool {
		sa, sc := a.c.Stats(), cc.c.Stats()
		return len(sa.Members) == 2 && len(sc.Members) == 2 && len(sa.Partitions)+len(sc.Partitions) == parts && sa.Ready && sc.Ready
	})
	t.Logf("stall of b: a and c own every partition after %v", took)
	suspendedAt := rec.By("b")
	time.Sleep(2 * time.Second) // b stays stalled: it must hand out nothing meanwhile
	if n := rec.By("b"); n != suspendedAt {
		t.Errorf("b handed out %d messages while its session was suspended", n-suspendedAt)
	}
	resumed := time.Now()
	proxies["b"].Resume()
	took = await(t, 60*time.Second, "b back after expiry", func() bool { return balanced(parts, a, b, cc) })
	t.Logf("b's session expired; after the stall it re-registered and the group rebalanced to 3 in %v", took)
	if rec.lostBy("b") == 0 || rec.lostBy("c") == 0 {
		t.Errorf("OnLost reported %d partitions of b and %d of c, whose sessions expired; want some of each", rec.lostBy("b"), rec.lostBy("c"))
	}
	if rec.lostBy("a") != 0 {
		t.Errorf("OnLost reported %d partitions of a, which lost nothing", rec.lostBy("a"))
	}
	_ = resumed

	// A new topic matching the whitelist is picked up without a restart.
	topic2 := prefix + "-b"
	createTopic(t, c, topic2, 6, 1)
	took = await(t, 60*time.Second, "new topic consumed", func() bool { return balanced(parts+6, a, b, cc) })
	t.Logf("new topic: 30 partitions balanced after %v", took)
	testcluster.MustProduce(t, c, topic2, 6, 0, 600)

	// A raised partition count is picked up too.
	if err := c.AddPartitions(ctx, topic2, 9); err != nil {
		t.Fatal(err)
	}
	took = await(t, 60*time.Second, "added partitions consumed", func() bool { return balanced(parts+9, a, b, cc) })
	t.Logf("partitions 6 -> 9: 33 partitions balanced after %v", took)

	// ZooKeeper restarts; sessions survive it, consumption goes on.
	if err := c.StopZooKeeper(); err != nil {
		t.Fatal(err)
	}
	if err := c.StartZooKeeper(ctx); err != nil {
		t.Fatal(err)
	}
	took = await(t, 90*time.Second, "balanced after the ZooKeeper restart", func() bool {
		for _, in := range ins {
			if s := in.c.Stats(); !s.SessionHealthy {
				return false
			}
		}
		return balanced(parts+9, a, b, cc)
	})
	t.Logf("ZooKeeper restarted: balanced again after %v", took)

	n := prod.Halt(t)
	await(t, 90*time.Second, "every message of "+topic+" consumed", func() bool { return rec.Count(topic, n) == n })
	await(t, 90*time.Second, "every message of "+topic2+" consumed", func() bool { return rec.Count(topic2, 600) == 600 })
	ow.check(t)
}

// TestStableIDReclaim: an instance with a configured id that "crashes"
// (its ZooKeeper connection cut, its session still alive on the server)
// and starts again reclaims its registration and its partitions at once,
// without waiting for the old session to expire.
func TestStableIDReclaim(t *testing.T) {
	c := testcluster.Shared(t)
	const parts = 8
	_, group, sub := newTopicRF(t, c, parts, 1)
	rec := newRecorder(t)
	p := testcluster.ZooKeeperProxy(t, c)
	const session = 10 * time.Second
	long := func(cfg *manager.Config) { cfg.SessionTimeout = session }
	old := join(t, c, group, sub, "stable", rec, joinOpts{zk: p.Addr() + c.Chroot(), configure: long})
	await(t, 30*time.Second, "old instance ready", func() bool { return balanced(parts, old) })

	p.Block() // the old process is gone as far as ZooKeeper can tell, but its session lives on
	start := time.Now()
	again := join(t, c, group, sub, "stable", rec, joinOpts{configure: long})
	took := await(t, 30*time.Second, "restarted instance owns every partition", func() bool {
		s := again.c.Stats()
		return s.Ready && len(s.Partitions) == parts
	})
	t.Logf("restart with a stable id: all %d partitions owned after %v (session timeout %v)", parts, took, session)
	if took >= session {
		t.Errorf("reclaiming took %v, not faster than the session timeout %v", took, session)
	}
	_ = start
}

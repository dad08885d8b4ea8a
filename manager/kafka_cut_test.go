package manager_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/faultproxy"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// brokerCut puts a fault proxy in front of every broker of a cluster; a
// member whose sarama config dials through it (saramaVia) can be cut off
// from the brokers alone, its ZooKeeper session untouched.
type brokerCut struct {
	proxies map[string]*faultproxy.Proxy // broker address -> its proxy
}

func newBrokerCut(t *testing.T, c *testcluster.Cluster) *brokerCut {
	t.Helper()
	bc := &brokerCut{proxies: map[string]*faultproxy.Proxy{}}
	for _, a := range c.Addrs() {
		p, err := faultproxy.New(a)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		bc.proxies[a] = p
	}
	return bc
}

// Dial implements sarama's proxy dialer: a broker's address goes to its
// proxy. Every connection the member makes to a broker (fetches, commits,
// offsets, metadata, the reachability probe) goes through it.
func (bc *brokerCut) Dial(network, addr string) (net.Conn, error) {
	if p, ok := bc.proxies[addr]; ok {
		addr = p.Addr()
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	return d.Dial(network, addr)
}

// saramaVia is the consumer's default sarama config, dialing through bc.
func (bc *brokerCut) saramaVia() *sarama.Config {
	s := sarama.NewConfig()
	s.Version = sarama.V2_1_0_0
	s.ClientID = "zkgroup"
	s.Net.Proxy.Enable = true
	s.Net.Proxy.Dialer = bc
	return s
}

// stall blackholes the brokers: connections stay open, no byte moves.
func (bc *brokerCut) stall() {
	for _, p := range bc.proxies {
		p.Stall()
	}
}

// heal ends the cut. The connections that carried the cut traffic are
// reset first and what they held is dropped: a blackhole drops packets,
// and a member tears down a connection whose request timed out (what the
// proxy cannot see while it holds the bytes).
func (bc *brokerCut) heal() {
	for _, p := range bc.proxies {
		p.Cut()
		p.Resume()
	}
}

// handOut is one hand-out of a message.
type handOut struct {
	by        string
	partition int32
	offset    int64
	at        time.Time
}

// deliveryLog records every hand-out by value.
type deliveryLog struct {
	mu   sync.Mutex
	byV  map[string][]handOut
	last map[string]map[int32]time.Time // member -> partition -> last hand-out
	// first hand-out per partition by member at or after since
	firstAfter map[string]map[int32]time.Time
	since      time.Time
}

func newDeliveryLog() *deliveryLog {
	return &deliveryLog{byV: map[string][]handOut{}, last: map[string]map[int32]time.Time{}, firstAfter: map[string]map[int32]time.Time{}}
}

func (l *deliveryLog) add(by string, m *manager.Message) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byV[string(m.Value)] = append(l.byV[string(m.Value)], handOut{by: by, partition: m.Partition, offset: m.Offset, at: now})
	if l.last[by] == nil {
		l.last[by], l.firstAfter[by] = map[int32]time.Time{}, map[int32]time.Time{}
	}
	l.last[by][m.Partition] = now
	if !l.since.IsZero() && now.After(l.since) {
		if _, ok := l.firstAfter[by][m.Partition]; !ok {
			l.firstAfter[by][m.Partition] = now
		}
	}
}

// mark starts recording first hand-outs from now.
func (l *deliveryLog) mark() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.since = time.Now()
	for _, m := range l.firstAfter {
		clear(m)
	}
}

func (l *deliveryLog) distinct(topic string, n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := 0
	for i := range n {
		if len(l.byV[testcluster.Value(topic, i)]) > 0 {
			k++
		}
	}
	return k
}

// runMember joins group and hands every message to rec and log, acking
// each at once.
func runMember(t *testing.T, c *testcluster.Cluster, group string, sub *subscription.Subscription, name string,
	rec *recorder, log *deliveryLog, configure func(*manager.Config)) *instance {
	t.Helper()
	cfg := baseConfig(t, name)
	cfg.SessionTimeout = 6 * time.Second
	cfg.KafkaUnreachableTimeout = cfg.SessionTimeout // not the default 45 s: the cuts last seconds
	cfg.Logger = cfg.Logger.With("member", name)
	rec.hooks(name, cfg)
	if configure != nil {
		configure(cfg)
	}
	in := joinInstance(t, c.ZooKeeperConnect(), group, sub, name, cfg, nil)
	in.wg.Go(func() {
		forEach(t, name+": Each", in.c.Each(context.Background()), func(m *manager.Message) {
			rec.receive(name, m, true)
			log.add(name, m)
			in.c.Ack(m)
		})
	})
	t.Cleanup(func() { in.close(t) })
	return in
}

// TestKafkaCutMovesPartitions cuts one of two members off the brokers
// only (its ZooKeeper session stays healthy): within the bound (the
// session timeout, 6 s) and one rebalance its partitions move to the
// other member, it is out of the group (deregistered, KafkaUnreachable,
// not ready) and stays out while cut; once the cut heals it joins again
// and gets its share back. Nothing is lost, no partition has two
// holders, and a message is delivered twice only if the cut member had
// handed it out at or past its last commit of the partition, the next
// owner starting from that commit.
func TestKafkaCutMovesPartitions(t *testing.T) { testKafkaCut(t, 0) }

// TestKafkaCutMovesStaticPartitions: the same with static members (a
// RestartGrace far beyond the test's bounds): a member that leaves for
// Kafka unreachability leaves without its restart marker, so its
// partitions move as fast as a dynamic member's instead of being kept for
// it.
func TestKafkaCutMovesStaticPartitions(t *testing.T) { testKafkaCut(t, 5*time.Minute) }

func testKafkaCut(t *testing.T, grace time.Duration) {
	c := testcluster.Shared(t)
	const parts = 6
	topic, group, sub := newTopicRF(t, c, parts, 1)
	bc := newBrokerCut(t, c)
	rec, log := newRecorder(t), newDeliveryLog()
	a := runMember(t, c, group, sub, "a", rec, log, func(cfg *manager.Config) { cfg.RestartGrace = grace })
	b := runMember(t, c, group, sub, "b", rec, log, func(cfg *manager.Config) { cfg.Sarama, cfg.RestartGrace = bc.saramaVia(), grace })
	await(t, 60*time.Second, "2 balanced", func() bool { return balanced(parts, a, b) })
	prod := testcluster.StartProducer(t, c, topic, parts, 0, parts, 30*time.Millisecond)
	await(t, 30*time.Second, "b commits", func() bool {
		for _, p := range b.c.Stats().Partitions {
			if p.Committed <= 0 {
				return false
			}
		}
		return true
	})

	// b's commits as last seen before it stopped: a lower bound of its
	// last commit, from which the next owner starts.
	bParts := map[int32]bool{}
	for _, p := range b.c.Stats().Partitions {
		bParts[p.Partition] = true
	}
	var commitsMu sync.Mutex
	bCommitted := map[int32]int64{}
	stopPoll := make(chan struct{})
	var pollWG sync.WaitGroup
	pollWG.Go(func() {
		for {
			for _, p := range b.c.Stats().Partitions {
				commitsMu.Lock()
				bCommitted[p.Partition] = max(bCommitted[p.Partition], p.Committed)
				commitsMu.Unlock()
			}
			select {
			case <-stopPoll:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})

	bound := 6 * time.Second
	log.mark()
	cutAt := time.Now()
	bc.stall()
	t.Logf("cut b off the brokers; b had %v", owned(b)["b"])
	await(t, bound+20*time.Second, "b out, a fetching everything", func() bool {
		sa, sb := a.c.Stats(), b.c.Stats()
		return sb.KafkaUnreachable && sa.Ready && len(sa.Partitions) == parts && len(sa.Members) == 1
	})
	moved := time.Since(cutAt)
	close(stopPoll)
	pollWG.Wait()
	sb := b.c.Stats()
	leftAfter := sb.KafkaUnreachableSince.Sub(cutAt)
	t.Logf("b left %v after the cut (%q); a fetched every partition %v after the cut", leftAfter, sb.KafkaUnreachableReason, moved)
	if sb.Ready || len(sb.Partitions) != 0 || sb.KafkaLeaves != 1 {
		t.Errorf("b out: ready %v, %d partitions, %d leaves", sb.Ready, len(sb.Partitions), sb.KafkaLeaves)
	}
	// b leaves once nothing answered for the bound: after the cut by the
	// bound less the time from its last answer to the cut (up to two probe
	// intervals of 1.5 s), never at the first failed probe.
	if leftAfter > bound+2*time.Second || leftAfter < bound-3*time.Second {
		t.Errorf("b left %v after the cut, want the bound %v less up to 3 s", leftAfter, bound)
	}
	// One rebalance: the deregistration seen, the owners read, the claims
	// made and the fetches started; 5 s on a loaded 2-core machine.
	if moved > bound+5*time.Second {
		t.Errorf("partitions moved %v after the cut, over the bound %v + one rebalance", moved, bound)
	}
	// The stall as a reader sees it: from the cut to a's first message of
	// each of b's partitions.
	await(t, 10*time.Second, "a hands out b's partitions", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		for p := range bParts {
			if _, ok := log.firstAfter["a"][p]; !ok {
				return false
			}
		}
		return true
	})
	var worst time.Duration
	log.mu.Lock()
	for p := range bParts {
		worst = max(worst, log.firstAfter["a"][p].Sub(cutAt))
	}
	log.mu.Unlock()
	t.Logf("stall of b's partitions: longest %v from the cut to a's first message (bound %v)", worst, bound)

	// b stays out while cut: it does not register again.
	zc, err := c.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	idsPath := c.Chroot() + zkdata.IDsPath(group)
	for range 20 {
		ids, _, err := zc.Children(idsPath)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 1 || ids[0] != "a" {
			t.Fatalf("members while b is cut: %v", ids)
		}
		if s := b.c.Stats(); !s.KafkaUnreachable || s.KafkaLeaves != 1 {
			t.Fatalf("b while cut: unreachable %v, leaves %d", s.KafkaUnreachable, s.KafkaLeaves)
		}
		time.Sleep(150 * time.Millisecond) // the cut lasts 3 s more
	}

	healAt := time.Now()
	bc.heal()
	await(t, 30*time.Second, "b back, balanced", func() bool { return balanced(parts, a, b) })
	t.Logf("b back and balanced %v after the heal", time.Since(healAt))
	if s := b.c.Stats(); s.KafkaUnreachable || s.KafkaLeaves != 1 || s.RebalancesByCause[manager.CauseKafka] == 0 {
		t.Errorf("b back: unreachable %v, leaves %d, causes %v", s.KafkaUnreachable, s.KafkaLeaves, s.RebalancesByCause)
	}

	n := prod.Halt(t)
	await(t, 60*time.Second, "every message delivered", func() bool { return log.distinct(topic, n) == n })
	rec.checkViolations(t)
	log.mu.Lock()
	defer log.mu.Unlock()
	dups := 0
	for i := range n {
		v := testcluster.Value(topic, i)
		ds := log.byV[v]
		if len(ds) < 2 {
			continue
		}
		dups++
		d0 := ds[0]
		ok := len(ds) == 2 && bParts[d0.partition] && d0.by == "b" && ds[1].by == "a" &&
			d0.at.Before(healAt) && d0.offset >= bCommitted[d0.partition]
		if !ok {
			t.Errorf("%s delivered again beyond b's last commit: %+v (b's last commit seen %d)", v, ds, bCommitted[d0.partition])
		}
	}
	t.Logf("%d messages, %d delivered twice (handed out by b at or past its last commit before the cut)", n, dups)
}

// TestKafkaCutAllStayOut cuts both members off the brokers: each leaves
// the group once, nobody registers again or claims a partition while the
// cut lasts (no churn: the first to leave does not hand its partitions to
// the other, whose probes fail too), and both come back and share the partitions once
// it heals; nothing is lost.
func TestKafkaCutAllStayOut(t *testing.T) {
	c := testcluster.Shared(t)
	const parts = 4
	topic, group, sub := newTopicRF(t, c, parts, 1)
	testcluster.MustProduce(t, c, topic, parts, 0, 400)
	bc := newBrokerCut(t, c)
	rec, log := newRecorder(t), newDeliveryLog()
	var cutting atomic.Bool
	var claimedWhileCut atomic.Int64
	via := func(cfg *manager.Config) {
		cfg.Sarama = bc.saramaVia()
		assigned := cfg.OnAssigned
		cfg.OnAssigned = func(ctx context.Context, c *manager.Consumer, parts map[string][]int32) {
			if cutting.Load() {
				claimedWhileCut.Add(int64(len(topicPartitions(parts))))
			}
			assigned(ctx, c, parts)
		}
	}
	a := runMember(t, c, group, sub, "a", rec, log, via)
	b := runMember(t, c, group, sub, "b", rec, log, via)
	await(t, 60*time.Second, "2 balanced", func() bool { return balanced(parts, a, b) })
	await(t, 30*time.Second, "first messages", func() bool { return log.distinct(topic, 400) == 400 })

	cutAt := time.Now()
	cutting.Store(true)
	bc.stall()
	await(t, 30*time.Second, "both out", func() bool {
		return a.c.Stats().KafkaUnreachable && b.c.Stats().KafkaUnreachable
	})
	t.Logf("both out %v after the cut", time.Since(cutAt))
	zc, err := c.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	idsPath := c.Chroot() + zkdata.IDsPath(group)
	await(t, 10*time.Second, "both deregistered", func() bool {
		ids, _, err := zc.Children(idsPath)
		return err == nil && len(ids) == 0
	})
	// 4 s more of the cut (several probe rounds of 1.5 s): nobody comes
	// back, nobody holds a partition.
	for range 25 {
		ids, _, err := zc.Children(idsPath)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 0 {
			t.Fatalf("registered while every member is cut off: %v", ids)
		}
		for _, in := range []*instance{a, b} {
			if s := in.c.Stats(); !s.KafkaUnreachable || s.KafkaLeaves != 1 || len(s.Partitions) != 0 {
				t.Fatalf("%s while cut: unreachable %v, leaves %d, %d partitions", in.name, s.KafkaUnreachable, s.KafkaLeaves, len(s.Partitions))
			}
		}
		time.Sleep(160 * time.Millisecond) // the cut lasts 4 s more
	}
	if held := ownersOf(t, zc, c.Chroot(), group, topic); len(held) > 0 {
		t.Errorf("owner nodes while every member is out: %v", held)
	}

	if n := claimedWhileCut.Load(); n > 0 {
		t.Errorf("%d partitions claimed while every member was cut off", n)
	}
	cutting.Store(false)
	healAt := time.Now()
	bc.heal()
	testcluster.MustProduce(t, c, topic, parts, 400, 400)
	await(t, 30*time.Second, "both back, balanced", func() bool { return balanced(parts, a, b) })
	t.Logf("both back and balanced %v after the heal", time.Since(healAt))
	await(t, 30*time.Second, "every message delivered", func() bool { return log.distinct(topic, 800) == 800 })
	for _, in := range []*instance{a, b} {
		if s := in.c.Stats(); s.KafkaLeaves != 1 {
			t.Errorf("%s left %d times", in.name, s.KafkaLeaves)
		}
	}
	rec.checkViolations(t)
}

// ownersOf returns the partitions of topic that have an owner node.
func ownersOf(t *testing.T, zc *zk.Conn, chroot, group, topic string) []string {
	t.Helper()
	nodes, _, err := zc.Children(chroot + zkdata.OwnerTopicPath(group, topic))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return nodes
}

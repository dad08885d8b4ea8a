package manager_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// poolInstance is a group member whose messages are acked by a pool of
// workers, each after a random delay and in random order: the way a
// concurrent application acks.
type poolInstance struct {
	*instance
	once sync.Once
	acks struct {
		sync.Mutex
		results map[manager.AckResult]int
	}
}

type poolOpts struct {
	workers  int           // ack workers (default 4)
	maxDelay time.Duration // random processing delay per message, up to this
	// slowEvery makes every slowEvery-th message (on average) take up to
	// slowDelay instead, so that acks overtake each other by far.
	slowEvery int
	slowDelay time.Duration
	strict    bool // holder check on every message
	noHooks   bool // no ownership hooks: a test that sets its own callbacks
	configure func(*manager.Config)
}

// baseConfig is the configuration every test instance starts from.
func baseConfig(t *testing.T, name string) *manager.Config {
	cfg := manager.NewConfig()
	cfg.InstanceID = name
	// Long enough to ride out the stalls of a loaded test machine: these
	// tests are about clean operation (the crash test's victim uses 6 s).
	cfg.SessionTimeout = 15 * time.Second
	cfg.Partition.CommitInterval = 200 * time.Millisecond
	cfg.Partition.DrainTimeout = 10 * time.Second
	cfg.Logger = testLogger(t).With("test", t.Name())
	return cfg
}

// joinPool joins a pool-acking instance; rec gets the ownership hooks
// and every delivery (for its ledger); with noHooks rec gets only the
// deliveries.
func joinPool(t *testing.T, c *testcluster.Cluster, group string, sub *subscription.Subscription, name string,
	rec *recorder, o poolOpts) *poolInstance {
	t.Helper()
	cfg := baseConfig(t, name)
	if !o.noHooks {
		ownerHooks(rec, name, cfg)
	}
	if o.configure != nil {
		o.configure(cfg)
	}
	in := &poolInstance{instance: joinInstance(t, c.ZooKeeperConnect(), group, sub, name, cfg, nil)}
	cons := in.c
	in.acks.results = map[manager.AckResult]int{}
	workers := o.workers
	if workers <= 0 {
		workers = 4
	}
	work := make(chan *manager.Message, workers)
	in.wg.Add(1 + workers)
	go func() {
		defer in.wg.Done()
		defer close(work)
		forEach(t, name+": Each", cons.Each(context.Background()), func(m *manager.Message) {
			receiveOwned(rec, name, m, o.strict)
			work <- m
		})
	}()
	for w := 0; w < workers; w++ {
		go func() {
			defer in.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w)+1, uint64(len(name))))
			h := &heldAcks{rng: rng, ack: in.ack}
			for {
				m, ok := h.next(chanSource(work))
				if !ok {
					break
				}
				switch {
				case o.slowEvery > 0 && rng.IntN(o.slowEvery) == 0:
					time.Sleep(time.Duration(rng.Int64N(int64(o.slowDelay)))) // simulated processing
				case o.maxDelay > 0:
					time.Sleep(time.Duration(rng.Int64N(int64(o.maxDelay)))) // simulated processing
				}
				h.add(m, 8)
			}
			h.flush()
		}()
	}
	t.Cleanup(func() { in.close(t) })
	return in
}

func (in *poolInstance) ack(m *manager.Message) {
	r := in.c.Ack(m)
	in.acks.Lock()
	in.acks.results[r]++
	in.acks.Unlock()
}

// ackResults returns how many acks had each result.
func (in *poolInstance) ackResults() map[manager.AckResult]int {
	in.acks.Lock()
	defer in.acks.Unlock()
	out := map[manager.AckResult]int{}
	for k, v := range in.acks.results {
		out[k] = v
	}
	return out
}

func (in *poolInstance) close(t *testing.T) { in.once.Do(func() { in.instance.close(t) }) }

// poolBalanced is balanced() for pool instances.
func poolBalanced(n int, ins ...*poolInstance) bool {
	cs := make([]*manager.Consumer, len(ins))
	for i, in := range ins {
		cs[i] = in.c
	}
	return balancedConsumers(n, cs...)
}

// newTopic creates a topic of parts partitions (replication 3) and returns
// it with a fresh group name and a static subscription to it.
func newTopic(t *testing.T, c *testcluster.Cluster, parts int32) (topic, group string, sub *subscription.Subscription) {
	t.Helper()
	return newTopicRF(t, c, parts, 3)
}

// newTopicRF is newTopic with replication rf (a cluster of fewer brokers).
func newTopicRF(t *testing.T, c *testcluster.Cluster, parts int32, rf int16) (topic, group string, sub *subscription.Subscription) {
	t.Helper()
	topic, group = testcluster.Name(t, "t"), testcluster.Name(t, "g")
	createTopic(t, c, topic, parts, rf)
	return topic, group, mustStatic(t, topic)
}

// createTopic creates topic with parts partitions and replication rf, or
// fails t.
func createTopic(t *testing.T, c *testcluster.Cluster, topic string, parts int32, rf int16) {
	t.Helper()
	if err := c.CreateTopic(context.Background(), topic, parts, rf); err != nil {
		t.Fatal(err)
	}
}

// checkCommitted fails t unless the Kafka-committed offsets equal want.
func checkCommitted(t *testing.T, c *testcluster.Cluster, group, topic string, parts int32, want map[int32]int64) {
	t.Helper()
	got := committed(t, c, group, topic, parts)
	for p := int32(0); p < parts; p++ {
		if got[p] != want[p] {
			t.Errorf("partition %d: committed %d, log-end %d", p, got[p], want[p])
		}
	}
}

// mustStatic returns a static subscription to topic.
func mustStatic(t *testing.T, topic string) *subscription.Subscription {
	t.Helper()
	sub, err := subscription.Static(topic)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// ownerHooks keeps rec's holders from the rebalance hooks without the
// assignment-time check of recorder.hooks: these tests flag an overlap
// when a message arrives (see receiveOwned).
func ownerHooks(r *recorder, name string, cfg *manager.Config) { r.holderHooks(name, cfg, false) }

// receiveOwned records m like recorder.receive and, with strict, flags it
// when another instance holds its partition: a message is recorded before
// it is acked, hence before its owner's drain ends and its claim is
// released, so an earlier owner's message never meets a later holder. (A
// message met with no holder is allowed: OnAssigned runs once fetching
// started.)
func receiveOwned(r *recorder, name string, m *manager.Message, strict bool) {
	r.record(name, m, strict, true)
}

// sessionWatch notices when an instance's ZooKeeper session was replaced
// (it expired): clean-operation guarantees do not hold across that.
type sessionWatch map[*manager.Consumer]int64

func watchSessions(cs ...*manager.Consumer) sessionWatch {
	w := sessionWatch{}
	for _, c := range cs {
		w[c] = c.Stats().SessionID
	}
	return w
}

// lost lists the instances whose session changed or whose partitions
// restarted (lost their claim) since watchSessions.
func (w sessionWatch) lost() []string {
	var out []string
	for c, id := range w {
		if s := c.Stats(); s.SessionID != id || s.PartitionRestarts > 0 {
			out = append(out, fmt.Sprintf("%s (session %x -> %x, %d partition restarts)", s.Instance, id, s.SessionID, s.PartitionRestarts))
		}
	}
	sort.Strings(out)
	return out
}

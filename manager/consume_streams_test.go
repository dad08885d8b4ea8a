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

type streamKey struct {
	tp  manager.TopicPartition
	gen uint64
}

// streamInstance is a ModePartitions member: one goroutine per partition
// stream reads and acks it (in small shuffled batches).
type streamInstance struct {
	*instance
	once sync.Once

	mu       sync.Mutex
	open     map[streamKey]bool // streams whose loop has not ended yet
	opened   int
	closed   int
	problems []string
}

func joinStreams(t *testing.T, c *testcluster.Cluster, group string, sub *subscription.Subscription, name string,
	rec *recorder) *streamInstance {
	t.Helper()
	cfg := baseConfig(t, name)
	cfg.Mode = manager.ModePartitions
	ownerHooks(rec, name, cfg)
	in := &streamInstance{instance: joinInstance(t, c.ZooKeeperConnect(), group, sub, name, cfg, nil), open: map[streamKey]bool{}}
	cons := in.c
	in.wg.Go(func() {
		for s, err := range cons.EachPartition(context.Background()) {
			if err != nil {
				t.Errorf("%s: EachPartition: %v", name, err)
				return
			}
			key := streamKey{manager.TopicPartition{Topic: s.Topic(), Partition: s.Partition()}, s.Generation()}
			in.mu.Lock()
			if in.open[key] {
				in.problem("stream %v opened twice", key)
			}
			for k := range in.open {
				if k.tp == key.tp {
					in.problem("stream %v opened while %v is still open", key, k)
				}
			}
			in.open[key] = true
			in.opened++
			in.mu.Unlock()
			in.wg.Go(func() { in.read(t, s, key, rec) })
		}
	})
	t.Cleanup(func() { in.close(t) })
	return in
}

// problem records a failed check; in.mu must be held.
func (in *streamInstance) problem(format string, args ...any) {
	in.problems = append(in.problems, fmt.Sprintf(format, args...))
}

func (in *streamInstance) read(t *testing.T, s *manager.PartitionStream, key streamKey, rec *recorder) {
	rng := rand.New(rand.NewPCG(uint64(key.tp.Partition), key.gen))
	h := &heldAcks{rng: rng, ack: func(m *manager.Message) {
		if r := in.c.Ack(m); r != manager.AckOK {
			in.mu.Lock()
			in.problem("%v: ack of offset %d: %v", key, m.Offset, r)
			in.mu.Unlock()
		}
	}}
	last := int64(-1)
	src := eachSource(t, s.Each)
	for {
		m, ok := h.next(src)
		if !ok {
			break
		}
		if m.Topic != key.tp.Topic || m.Partition != key.tp.Partition || m.Offset <= last || m.Generation() != key.gen {
			in.mu.Lock()
			in.problem("stream %v handed out %s/%d@%d (generation %d) after offset %d", key, m.Topic, m.Partition, m.Offset, m.Generation(), last)
			in.mu.Unlock()
		}
		last = m.Offset
		receiveOwned(rec, in.name, m, true)
		h.add(m, 10)
	}
	h.flush()
	in.mu.Lock()
	delete(in.open, key)
	in.closed++
	in.mu.Unlock()
}

// openStreams returns the partitions with an open stream and their
// generations.
func (in *streamInstance) openStreams() map[manager.TopicPartition]uint64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := map[manager.TopicPartition]uint64{}
	for k := range in.open {
		out[k.tp] = k.gen
	}
	return out
}

// consistent reports whether the open streams are exactly the partitions
// the instance fetches, with the same generations.
func (in *streamInstance) consistent() bool {
	open := in.openStreams()
	ps := in.c.Stats().Partitions
	if len(ps) != len(open) {
		return false
	}
	for _, p := range ps {
		if g, ok := open[manager.TopicPartition{Topic: p.Topic, Partition: p.Partition}]; !ok || g != p.Generation {
			return false
		}
	}
	return true
}

func (in *streamInstance) counts() (opened, closed int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.opened, in.closed
}

func (in *streamInstance) close(t *testing.T) {
	in.once.Do(func() {
		if err := in.c.Close(); err != nil {
			t.Errorf("close %s: %v", in.name, err)
		}
		in.wg.Wait()
		in.mu.Lock()
		defer in.mu.Unlock()
		for _, p := range in.problems {
			t.Errorf("%s: %s", in.name, p)
		}
		if len(in.open) != 0 {
			t.Errorf("%s: streams still open after Close: %v", in.name, in.open)
		}
		if in.opened != in.closed {
			t.Errorf("%s: %d streams opened, %d closed", in.name, in.opened, in.closed)
		}
	})
}

// streamsBalanced is balanced() for stream instances whose open streams
// are also those their Stats lists (consistent).
func streamsBalanced(n int, ins ...*streamInstance) bool {
	cs := make([]*manager.Consumer, len(ins))
	for i, in := range ins {
		if !in.consistent() {
			return false
		}
		cs[i] = in.c
	}
	return balancedConsumers(n, cs...)
}

func tpsOf(m map[manager.TopicPartition]uint64) []int32 {
	var out []int32
	for tp := range m {
		out = append(out, tp.Partition)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestConsumePartitionStreams: in ModePartitions each owned partition gets
// a stream when it is claimed (from EachPartition), and the stream's Each
// loop ends when the partition is revoked. With a producer writing, a
// owns all 8 partitions (8 streams open); b joins (a's 4 revoked streams
// close, b opens 4, each instance's open streams are exactly the
// partitions it fetches, with the same generation); b leaves (its 4
// streams close, a opens 4 new ones with new generations); after Close
// every stream is closed and EachPartition ends by itself. Each stream
// hands out only its own partition's messages, in offset order, of its
// own generation; every message is consumed exactly once; the committed
// offsets end at the log-end offsets.
func TestConsumePartitionStreams(t *testing.T) {
	c := testcluster.Shared(t)
	const parts = 8
	topic, group, sub := newTopic(t, c, parts)
	testcluster.MustProduce(t, c, topic, parts, 0, 800)
	rec := newRecorder(t)
	led := rec.Ledger
	prod := testcluster.StartProducer(t, c, topic, parts, 800, 16, 20*time.Millisecond)

	a := joinStreams(t, c, group, sub, "a", rec)
	await(t, 60*time.Second, "a owning 8 with 8 open streams", func() bool { return streamsBalanced(parts, a) })
	if o, cl := a.counts(); o != parts || cl != 0 {
		t.Errorf("a alone: %d streams opened, %d closed; want %d, 0", o, cl, parts)
	}
	first := a.openStreams()

	b := joinStreams(t, c, group, sub, "b", rec)
	await(t, 60*time.Second, "a, b balanced with matching streams", func() bool { return streamsBalanced(parts, a, b) })
	if o, cl := a.counts(); o != parts || cl != parts/2 {
		t.Errorf("after b joined: a opened %d streams, closed %d; want %d, %d", o, cl, parts, parts/2)
	}
	if o, cl := b.counts(); o != parts/2 || cl != 0 {
		t.Errorf("after b joined: b opened %d streams, closed %d; want %d, 0", o, cl, parts/2)
	}
	for tp, g := range a.openStreams() {
		if first[tp] != g {
			t.Errorf("a's stream of kept partition %d changed generation %d -> %d", tp.Partition, first[tp], g)
		}
	}
	t.Logf("a streams %v, b streams %v", tpsOf(a.openStreams()), tpsOf(b.openStreams()))
	before := led.Total()
	await(t, 60*time.Second, "progress with a and b", func() bool { return led.Total() >= before+400 })

	bStreams := b.openStreams()
	b.close(t)
	await(t, 60*time.Second, "a owning 8 again", func() bool { return streamsBalanced(parts, a) })
	if o, cl := a.counts(); o != parts+parts/2 || cl != parts/2 {
		t.Errorf("after b left: a opened %d streams, closed %d; want %d, %d", o, cl, parts+parts/2, parts/2)
	}
	for tp, g := range a.openStreams() {
		if bg, ok := bStreams[tp]; ok && (bg == g || first[tp] == g) {
			t.Errorf("partition %d back at a with generation %d, not a new one", tp.Partition, g)
		}
	}

	n := prod.Halt(t)
	await(t, 2*time.Minute, "every message consumed", func() bool { return led.Count(topic, n) == n })
	hwm := testcluster.AwaitCommittedAtEnd(t, c, group, topic, parts)
	a.close(t)
	// EachPartition ends by itself after Close (its context never ends
	// here: a loop that waited would hang the test, hence the timeout).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	for s, err := range a.c.EachPartition(ctx) {
		t.Errorf("EachPartition after Close yielded %v, %v", s, err)
	}
	if ctx.Err() != nil {
		t.Error("EachPartition did not end after Close")
	}
	cancel()
	led.CheckExactlyOnce(t, topic, n)
	led.CheckContiguous(t, hwm)
	rec.checkViolations(t)
	checkCommitted(t, c, group, topic, parts, hwm)
}

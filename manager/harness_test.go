package manager_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/faultproxy"
	"github.com/zkgroup/zkgroup/internal/logcheck"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// recorder checks what a group's instances consume: its Ledger has every
// delivery (for the exactly-once check), and it checks that no two
// instances hold one partition at once.
type recorder struct {
	*testcluster.Ledger
	mu         sync.Mutex
	holders    map[manager.TopicPartition]string
	lost       map[string]int // instance -> partitions reported by OnLost
	violations []string
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{Ledger: testcluster.NewLedger(), holders: map[manager.TopicPartition]string{}, lost: map[string]int{}}
}

func (r *recorder) violation(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// hooks wires the exclusive-ownership check into an instance's config.
func (r *recorder) hooks(name string, cfg *manager.Config) { r.holderHooks(name, cfg, true) }

// holderHooks keeps r.holders from the rebalance hooks; with
// checkAssign, an assignment while another instance holds the partition
// is a violation.
func (r *recorder) holderHooks(name string, cfg *manager.Config, checkAssign bool) {
	cfg.OnAssigned = func(_ context.Context, _ *manager.Consumer, parts map[string][]int32) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, tp := range topicPartitions(parts) {
			if h, ok := r.holders[tp]; checkAssign && ok && h != name {
				r.violation("%s/%d assigned to %s while %s holds it", tp.Topic, tp.Partition, name, h)
			}
			r.holders[tp] = name
		}
	}
	cfg.OnRevoked = func(_ context.Context, _ *manager.Consumer, parts map[string][]int32) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, tp := range topicPartitions(parts) {
			if r.holders[tp] == name {
				delete(r.holders, tp)
			}
		}
	}
	revoked := cfg.OnRevoked
	cfg.OnLost = func(ctx context.Context, c *manager.Consumer, parts map[string][]int32) {
		revoked(ctx, c, parts)
		r.mu.Lock()
		r.lost[name] += len(topicPartitions(parts))
		r.mu.Unlock()
	}
}

// topicPartitions lists a rebalance callback's partitions.
func topicPartitions(parts map[string][]int32) []manager.TopicPartition {
	var out []manager.TopicPartition
	for t, ps := range parts {
		for _, p := range ps {
			out = append(out, manager.TopicPartition{Topic: t, Partition: p})
		}
	}
	return out
}

// receive records m; with strict, a message of a partition that name does
// not hold is a violation.
func (r *recorder) receive(name string, m *manager.Message, strict bool) {
	r.record(name, m, strict, false)
}

// record records m in the ledger; with strict, a message of a partition
// another instance holds is a violation, and so is one of an unheld
// partition unless unheldOK.
func (r *recorder) record(name string, m *manager.Message, strict, unheldOK bool) {
	r.mu.Lock()
	tp := manager.TopicPartition{Topic: m.Topic, Partition: m.Partition}
	if h := r.holders[tp]; strict && h != name && !(unheldOK && h == "") {
		r.violation("%s received %s/%d@%d while the holder is %q", name, m.Topic, m.Partition, m.Offset, h)
	}
	r.mu.Unlock()
	r.Add(name, m.Partition, m.Offset, string(m.Value))
}

// heldAcks holds received messages and acks them in batches, in a random
// order, as a user acking out of order would. Not safe for concurrent use.
type heldAcks struct {
	rng  *rand.Rand
	held []*manager.Message
	ack  func(*manager.Message)
}

// add holds m and acks the batch once it reaches a random size up to max.
func (h *heldAcks) add(m *manager.Message, max int) {
	h.held = append(h.held, m)
	if len(h.held) >= 1+h.rng.IntN(max) {
		h.flush()
	}
}

// flush acks every held message, shuffled.
func (h *heldAcks) flush() {
	h.rng.Shuffle(len(h.held), func(i, j int) { h.held[i], h.held[j] = h.held[j], h.held[i] })
	for _, m := range h.held {
		h.ack(m)
	}
	h.held = h.held[:0]
}

// next returns the next message of src; when none is waiting it first
// acks what it holds: a user that sits on acks while idle would stall
// every drain. ok is false once src ended.
func (h *heldAcks) next(src source) (*manager.Message, bool) {
	if m, ok := src(false); m != nil || !ok {
		return m, ok
	}
	h.flush()
	return src(true)
}

// A source hands out messages one at a time: (m, true), or (nil, false)
// once it ended. Without wait it returns (nil, true) at once when no
// message is waiting.
type source func(wait bool) (m *manager.Message, ok bool)

// eachSource is the source of an Each loop (a Consumer's or a
// PartitionStream's), pulled one message at a time; see next.
func eachSource(t *testing.T, each eachFunc) source {
	return func(wait bool) (*manager.Message, bool) {
		timeout := time.Duration(0)
		if !wait {
			timeout = -1
		}
		m, err := next(each, timeout)
		switch {
		case err == nil:
			return m, true
		case errors.Is(err, errEnded):
			return nil, false
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			return nil, true
		}
		t.Errorf("Each: %v", err)
		return nil, false
	}
}

// chanSource is the source of a channel of messages.
func chanSource(ch <-chan *manager.Message) source {
	return func(wait bool) (*manager.Message, bool) {
		if !wait {
			select {
			case m, ok := <-ch:
				return m, ok
			default:
				return nil, true
			}
		}
		m, ok := <-ch
		return m, ok
	}
}

// eachFunc is Consumer.Each or PartitionStream.Each.
type eachFunc func(context.Context) iter.Seq2[*manager.Message, error]

// errEnded: an Each loop ended by itself (the consumer stopped, or the
// stream ended), not by its context.
var errEnded = errors.New("the loop ended")

// next returns the next message of each, waiting up to timeout (0: until
// the loop ends; < 0: not at all, only what is waiting): the loop is left
// after its first message, which keeps the rest of its batch for the next
// Each: pulling one message at a time this way is what a receive from an
// unbuffered channel of messages was (each message's partition is checked
// when the message is asked for). The error is errEnded when the loop ended
// by itself, ctx's error when the timeout passed first, or what the loop
// yielded (ErrMode).
func next(each eachFunc, timeout time.Duration) (*manager.Message, error) {
	ctx := context.Background()
	switch {
	case timeout > 0:
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	case timeout < 0:
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		cancel()
	}
	for m, err := range each(ctx) {
		return m, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, errEnded
}

// mustNext is next that fails t unless a message came within timeout.
func mustNext(t *testing.T, each eachFunc, timeout time.Duration) *manager.Message {
	t.Helper()
	m, err := next(each, timeout)
	if err != nil {
		t.Fatalf("no message within %v: %v", timeout, err)
	}
	return m
}

// await polls cond every 5 ms until it holds or the timeout passes.
func await(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return testcluster.Await(t, timeout, 5*time.Millisecond, what, cond)
}

// instance is one running group member and the goroutines a test runs for
// it (counted in wg): one that logs its errors, and those that consume.
type instance struct {
	name string
	c    *manager.Consumer
	wg   sync.WaitGroup
}

// joinInstance joins group as name with cfg through the ZooKeeper connect
// string zk and starts the goroutine that logs its errors (and hands each
// to keep, unless nil) until Close; the caller starts the goroutines that
// consume, counting them in wg.
func joinInstance(t *testing.T, zk, group string, sub *subscription.Subscription, name string, cfg *manager.Config,
	keep func(error)) *instance {
	t.Helper()
	cons, err := manager.Join(context.Background(), group, sub, zk, cfg)
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	in := &instance{name: name, c: cons}
	logErrors(t, name, cons, &in.wg, keep)
	return in
}

type joinOpts struct {
	strict    bool          // holder check on every message
	ackDelay  time.Duration // random delay up to this before an ack
	shuffle   bool          // ack in random order (batches of up to 50)
	configure func(*manager.Config)
	zk        string // connect string to use instead of the cluster's (a fault proxy)
	messages  bool   // receive from Consumer.Messages instead of ranging over Each
}

func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("ZKGROUP_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(logcheck.Check(t, slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
}

func join(t *testing.T, c *testcluster.Cluster, group string, sub *subscription.Subscription, name string, rec *recorder, o joinOpts) *instance {
	t.Helper()
	in := joinInstance(t, o.connect(c), group, sub, name, o.config(t, name, rec), nil)
	o.consume(t, in, rec)
	return in
}

// joinAll joins an instance for each of names at once, each Join in a
// goroutine of its own (a fleet started together), and consumes as join
// does.
func joinAll(t *testing.T, c *testcluster.Cluster, group string, sub *subscription.Subscription, names []string, rec *recorder, o joinOpts) []*instance {
	t.Helper()
	cfgs := make([]*manager.Config, len(names))
	for i, name := range names {
		cfgs[i] = o.config(t, name, rec)
	}
	cons := make([]*manager.Consumer, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i := range names {
		wg.Go(func() { cons[i], errs[i] = manager.Join(context.Background(), group, sub, o.connect(c), cfgs[i]) })
	}
	wg.Wait()
	var ins []*instance
	for i, name := range names {
		if errs[i] != nil {
			t.Errorf("join %s: %v", name, errs[i])
			continue
		}
		in := &instance{name: name, c: cons[i]}
		logErrors(t, name, in.c, &in.wg, nil)
		o.consume(t, in, rec)
		ins = append(ins, in)
	}
	if len(ins) < len(names) {
		t.FailNow() // the others close at cleanup
	}
	return ins
}

// config is join's configuration of the instance name.
func (o joinOpts) config(t *testing.T, name string, rec *recorder) *manager.Config {
	cfg := baseConfig(t, name)
	cfg.SessionTimeout = 6 * time.Second // a crashed instance's partitions move soon
	rec.hooks(name, cfg)
	if o.configure != nil {
		o.configure(cfg)
	}
	return cfg
}

// connect is the ZooKeeper connect string join uses.
func (o joinOpts) connect(c *testcluster.Cluster) string {
	if o.zk != "" {
		return o.zk
	}
	return c.ZooKeeperConnect()
}

// consume starts in's goroutine that receives, records and acks as o
// says, and closes in at the test's cleanup.
func (o joinOpts) consume(t *testing.T, in *instance, rec *recorder) {
	cons := in.c
	name := in.name
	in.wg.Go(func() {
		rng := rand.New(rand.NewPCG(uint64(len(name)), 7))
		h := &heldAcks{rng: rng, ack: func(m *manager.Message) { cons.Ack(m) }}
		src := eachSource(t, cons.Each)
		if o.messages {
			src = chanSource(cons.Messages())
		}
		for {
			m, ok := h.next(src)
			if !ok {
				break
			}
			rec.receive(name, m, o.strict)
			if o.ackDelay > 0 {
				time.Sleep(time.Duration(rng.Int64N(int64(o.ackDelay)))) // simulated processing time
			}
			if o.shuffle {
				h.add(m, 50)
				continue
			}
			cons.Ack(m)
		}
		h.flush()
	})
	t.Cleanup(func() { in.close(t) })
}

func (in *instance) close(t *testing.T) {
	if err := in.c.Close(); err != nil {
		t.Errorf("close %s: %v", in.name, err)
	}
	in.wg.Wait()
}

// owned returns what each instance reports as fetching.
func owned(ins ...*instance) map[string][]manager.TopicPartition {
	out := map[string][]manager.TopicPartition{}
	for _, in := range ins {
		for _, p := range in.c.Stats().Partitions {
			out[in.name] = append(out[in.name], manager.TopicPartition{Topic: p.Topic, Partition: p.Partition})
		}
	}
	return out
}

// balanced reports whether the instances are all ready and together fetch
// each of n partitions exactly once, balanced within one.
func balanced(n int, ins ...*instance) bool {
	cs := make([]*manager.Consumer, len(ins))
	for i, in := range ins {
		cs[i] = in.c
	}
	return balancedConsumers(n, cs...)
}

// balancedConsumers is balanced for bare consumers.
func balancedConsumers(n int, cs ...*manager.Consumer) bool {
	seen := map[manager.TopicPartition]int{}
	lo, hi := n, 0
	for _, c := range cs {
		s := c.Stats()
		if !s.Ready || len(s.Members) != len(cs) {
			return false
		}
		k := len(s.Partitions)
		lo, hi = min(lo, k), max(hi, k)
		for _, p := range s.Partitions {
			seen[manager.TopicPartition{Topic: p.Topic, Partition: p.Partition}]++
		}
	}
	if len(seen) != n || hi-lo > 1 {
		return false
	}
	for _, k := range seen {
		if k != 1 {
			return false
		}
	}
	return true
}

func (r *recorder) checkViolations(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.violations {
		t.Error("ownership violation: " + v)
	}
}

// committed reads the group's committed offsets from Kafka.
func committed(t *testing.T, c *testcluster.Cluster, group, topic string, parts int32) map[int32]int64 {
	t.Helper()
	rows, err := c.CommittedOffsets(context.Background(), group, topic, parts)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// lostBy returns how many partitions OnLost reported for instance name.
func (r *recorder) lostBy(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost[name]
}

// logErrors logs cons's errors from a goroutine of wg until Close closes
// Errors(), and hands each to keep unless it is nil.
func logErrors(t *testing.T, name string, cons *manager.Consumer, wg *sync.WaitGroup, keep func(error)) {
	wg.Go(func() {
		for err := range cons.Errors() {
			t.Logf("%s: error: %v", name, err)
			if keep != nil {
				keep(err)
			}
		}
	})
}

// forEach hands each message of an Each loop to fn until the loop ends; an
// error the loop yields fails t (labelled what) and ends it.
func forEach(t *testing.T, what string, each iter.Seq2[*manager.Message, error], fn func(*manager.Message)) {
	for m, err := range each {
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		fn(m)
	}
}

// pollAll hands each batch poll returns to handle until poll fails, and
// returns that error.
func pollAll(poll func(context.Context) (*manager.Batch, error), handle func(*manager.Batch)) error {
	for {
		b, err := poll(context.Background())
		if err != nil {
			return err
		}
		handle(b)
	}
}

// mustJoin joins group on c's ZooKeeper or fails t.
func mustJoin(t *testing.T, c *testcluster.Cluster, group string, sub *subscription.Subscription, cfg *manager.Config) *manager.Consumer {
	t.Helper()
	cons, err := manager.Join(context.Background(), group, sub, c.ZooKeeperConnect(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cons
}

// joinProxied joins an instance of each name, each reaching ZooKeeper
// through a fault proxy of its own (o's zk is set to it), and returns them
// with the proxies by name.
func joinProxied(t *testing.T, c *testcluster.Cluster, group string, sub *subscription.Subscription, rec *recorder,
	names []string, o func(name string) joinOpts) ([]*instance, map[string]*faultproxy.Proxy) {
	t.Helper()
	proxies := map[string]*faultproxy.Proxy{}
	var ins []*instance
	for _, name := range names {
		p := testcluster.ZooKeeperProxy(t, c)
		proxies[name] = p
		opts := o(name)
		opts.zk = p.Addr() + c.Chroot()
		ins = append(ins, join(t, c, group, sub, name, rec, opts))
	}
	return ins, proxies
}

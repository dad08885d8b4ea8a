package scale

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/zkgroup/zkgroup/manager/assign"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// runEnv is what the members of one run of one side share.
type runEnv struct {
	c     *testcluster.Cluster
	topic string
	// topics, when set, are the subscribed topics (topic is then unused):
	// the tracker numbers partition p of topics[i] i*perTopic+p.
	topics   []string
	perTopic int32
	base     map[string]int32
	// zkConnect, when set, is the connect string zkgroup members use
	// (the counting proxy's); else the cluster's.
	zkConnect string
	sub       *subscription.Subscription
	group     string
	tr        *tracker
	req       *benchkit.Requests // every Kafka request of this side's members
	errs      errLog
	// static, when above 0, makes members static: a stable instance id
	// per member index (zkgroup InstanceID with RestartGrace = static,
	// sarama Consumer.Group.InstanceId, franz-go InstanceID).
	static time.Duration
	// redelivered, when set, counts the messages delivered again.
	redelivered *redeliveries
}

// subscribed lists the topics the members subscribe to.
func (env *runEnv) subscribed() []string {
	if len(env.topics) > 0 {
		return env.topics
	}
	return []string{env.topic}
}

// setTopics makes the run span topics of perTopic partitions each.
func (env *runEnv) setTopics(topics []string, perTopic int) {
	env.topics, env.perTopic = topics, int32(perTopic)
	env.base = make(map[string]int32, len(topics))
	for i, t := range topics {
		env.base[t] = int32(i) * env.perTopic
	}
}

// gp is the tracker's number of partition p of topic: p itself with one
// topic, -1 for a topic not subscribed.
func (env *runEnv) gp(topic string, p int32) int32 {
	if env.base == nil {
		if topic != env.topic {
			return -1
		}
		return p
	}
	b, ok := env.base[topic]
	if !ok {
		return -1
	}
	return b + p
}

// partName names the tracker's partition g as topic/partition.
func (env *runEnv) partName(g int) string {
	if env.base == nil || env.perTopic <= 0 {
		return fmt.Sprintf("%s/%d", env.topic, g)
	}
	i, p := g/int(env.perTopic), g%int(env.perTopic)
	if i >= len(env.topics) {
		return fmt.Sprintf("#%d", g)
	}
	return fmt.Sprintf("%s/%d", env.topics[i], p)
}

// eachPart calls f with the tracker's number of every partition of m.
func (env *runEnv) eachPart(m map[string][]int32, f func(int32)) {
	for t, ps := range m {
		for _, p := range ps {
			if g := env.gp(t, p); g >= 0 {
				f(g)
			}
		}
	}
}

// instanceID is member idx's stable id in a static run.
func (env *runEnv) instanceID(idx int) string { return fmt.Sprintf("%s-m%d", env.group, idx) }

// delivered records offset off of partition p as delivered, for the
// redelivery count.
func (env *runEnv) delivered(p int32, off int64) {
	if env.redelivered != nil {
		env.redelivered.add(p, off)
	}
}

// redeliveries counts deliveries of offsets at or below the highest
// delivered of their partition (every side delivers a partition in
// order): messages delivered more than once.
type redeliveries struct {
	mu   sync.Mutex
	high map[int32]int64
	n    atomic.Int64
}

func newRedeliveries() *redeliveries { return &redeliveries{high: map[int32]int64{}} }

func (r *redeliveries) add(p int32, off int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.high[p]; ok && off <= h {
		r.n.Add(1)
		return
	}
	r.high[p] = off
}

// errLog counts the errors members report and keeps the first few.
type errLog struct {
	n     atomic.Int64
	mu    sync.Mutex
	first []string
}

func (e *errLog) add(member int, err error) {
	if e.n.Add(1) > 3 {
		return
	}
	e.mu.Lock()
	e.first = append(e.first, fmt.Sprintf("member %d: %v", member, err))
	e.mu.Unlock()
}

func (e *errLog) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n.Load() == 0 {
		return "none"
	}
	return fmt.Sprintf("%d, first: %q", e.n.Load(), e.first)
}

// member is one group member of either side.
type member interface {
	// Close leaves the group and returns how long that took.
	Close() time.Duration
}

// side is one way of running a group member.
type side struct {
	name string
	join func(env *runEnv, idx int) (member, error)
}

func sideByName(name string) (side, error) {
	switch name {
	case "zkgroup":
		return side{name: name, join: joinZkgroup}, nil
	case "sarama":
		return side{name: name, join: joinSarama}, nil
	case "franz-go":
		return side{name: name, join: joinFranz}, nil
	}
	return side{}, fmt.Errorf("unknown side %q (zkgroup, sarama, franz-go)", name)
}

// clientConfig is the sarama config of one member: Kafka 3.9, its own
// metrics registry, and every connection dialed through the side's request
// counter.
func clientConfig(env *runEnv, clientID string) *sarama.Config {
	sc := sarama.NewConfig()
	sc.Version = sarama.V3_9_0_0
	sc.ClientID = clientID
	sc.Net.Proxy.Enable = true
	sc.Net.Proxy.Dialer = env.req.Dialer(sc.Net.DialTimeout)
	return sc
}

// zkMember is a zkgroup member: Join with the library's defaults (merged
// mode, its default strategy unless -zkgroup-strategy), starting from the
// newest offset as sarama does, ranging over Each and acking each message.
type zkMember struct {
	c    *manager.Consumer
	read sync.WaitGroup
	// logBuf and logFile: the member's log with $ZKGROUP_BENCH_LOG (nil
	// without), flushed and closed by Close.
	logBuf  *bufio.Writer
	logFile *os.File
}

func joinZkgroup(env *runEnv, idx int) (member, error) {
	cfg := manager.NewConfig()
	cfg.Sarama = clientConfig(env, fmt.Sprintf("bench-zkgroup-%d", idx))
	cfg.Partition.Initial = manager.InitialNewest
	if env.static > 0 {
		cfg.InstanceID, cfg.RestartGrace = env.instanceID(idx), env.static
	}
	var logBuf *bufio.Writer
	var logFile *os.File
	if dir := os.Getenv("ZKGROUP_BENCH_LOG"); dir != "" {
		// A diagnostic: each member's log, at info (debug with
		// $ZKGROUP_BENCH_LOG_DEBUG), in a file of its own.
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.log", env.group, idx)))
		if err != nil {
			return nil, err
		}
		opts := &slog.HandlerOptions{}
		if os.Getenv("ZKGROUP_BENCH_LOG_DEBUG") != "" {
			opts.Level = slog.LevelDebug
		}
		// Buffered (a write per line would slow the member down): the
		// handler serializes the writes; Close flushes.
		logBuf = bufio.NewWriterSize(f, 1<<20)
		logFile = f
		cfg.Logger = slog.New(slog.NewTextHandler(logBuf, opts))
	}
	if *flagZkJoinSettle > 0 {
		cfg.JoinSettle = *flagZkJoinSettle
	}
	if *flagZkStrategy != "" {
		s, err := assign.ByName(*flagZkStrategy)
		if err != nil {
			return nil, err
		}
		cfg.Strategy = s
	}
	cfg.OnAssigned = func(_ context.Context, _ *manager.Consumer, parts map[string][]int32) {
		env.eachPart(parts, func(p int32) { env.tr.assign(idx, p) })
	}
	cfg.OnRevoked = func(_ context.Context, _ *manager.Consumer, parts map[string][]int32) {
		env.eachPart(parts, func(p int32) { env.tr.revoke(idx, p) })
	}
	zc := env.zkConnect
	if zc == "" {
		zc = env.c.ZooKeeperConnect()
	}
	c, err := manager.Join(context.Background(), env.group, env.sub, zc, cfg)
	if err != nil {
		if logBuf != nil { // what it logged on the way tells why
			_ = logBuf.Flush()
			_ = logFile.Close()
		}
		return nil, err
	}
	m := &zkMember{c: c, logBuf: logBuf, logFile: logFile}
	m.read.Add(2)
	go func() {
		defer m.read.Done()
		for msg, err := range c.Each(context.Background()) {
			if err != nil {
				return
			}
			env.tr.deliver(idx, env.gp(msg.Topic, msg.Partition), benchkit.ProducedAt(msg.Value), msg.Timestamp.UnixNano())
			env.delivered(env.gp(msg.Topic, msg.Partition), msg.Offset)
			msg.Ack()
		}
	}()
	go func() {
		defer m.read.Done()
		for err := range c.Errors() {
			env.errs.add(idx, err)
		}
	}()
	return m, nil
}

func (m *zkMember) Close() time.Duration {
	start := time.Now()
	_ = m.c.Close() // an error was reported on Errors() too
	d := time.Since(start)
	m.read.Wait()
	if m.logBuf != nil { // nothing of the consumer logs after Close
		_ = m.logBuf.Flush()
		_ = m.logFile.Close()
	}
	return d
}

// saramaMember is a sarama ConsumerGroup member as sarama's docs show it:
// Consume in a loop, ConsumeClaim marking every message, autocommit
// (every second), newest offset at first, the strategy of
// -sarama-strategy.
type saramaMember struct {
	g      sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
	errs   chan struct{}
}

func saramaStrategy() (sarama.BalanceStrategy, error) {
	switch *flagSaramaStrategy {
	case "range":
		return sarama.NewBalanceStrategyRange(), nil
	case "sticky":
		return sarama.NewBalanceStrategySticky(), nil
	case "roundrobin":
		return sarama.NewBalanceStrategyRoundRobin(), nil
	case "cooperative-sticky":
		return sarama.NewBalanceStrategyCooperativeSticky(), nil
	}
	return nil, fmt.Errorf("-sarama-strategy: %q is not range, sticky, roundrobin or cooperative-sticky", *flagSaramaStrategy)
}

func joinSarama(env *runEnv, idx int) (member, error) {
	cfg := clientConfig(env, fmt.Sprintf("bench-sarama-%d", idx))
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetNewest
	if env.static > 0 {
		cfg.Consumer.Group.InstanceId = env.instanceID(idx)
	}
	st, err := saramaStrategy()
	if err != nil {
		return nil, err
	}
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{st}
	g, err := sarama.NewConsumerGroup(env.c.Addrs(), env.group, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &saramaMember{g: g, cancel: cancel, done: make(chan struct{}), errs: make(chan struct{})}
	h := &handler{env: env, idx: idx}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, env.subscribed(), h); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				env.errs.add(idx, err)
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond): // no busy loop on a persistent error
				}
			}
		}
	}()
	go func() {
		defer close(m.errs)
		for err := range g.Errors() {
			env.errs.add(idx, err)
		}
	}()
	return m, nil
}

// Close as sarama's example does it: cancel the context, wait for Consume
// to return, close the group.
func (m *saramaMember) Close() time.Duration {
	start := time.Now()
	m.cancel()
	<-m.done
	_ = m.g.Close()
	d := time.Since(start)
	<-m.errs
	return d
}

type handler struct {
	env *runEnv
	idx int
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *handler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	p := h.env.gp(claim.Topic(), claim.Partition())
	h.env.tr.assign(h.idx, p)
	defer h.env.tr.revoke(h.idx, p)
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.env.tr.deliver(h.idx, p, benchkit.ProducedAt(msg.Value), msg.Timestamp.UnixNano())
			h.env.delivered(p, msg.Offset)
			sess.MarkMessage(msg, "")
		case <-sess.Context().Done():
			return nil
		}
	}
}

// franzMember is a franz-go group member as its docs show it: PollFetches
// in a loop, autocommit of what was polled (every 5 s, and on revoke and
// leave: the revoke hook commits as franz-go's default one does), its
// default balancer (cooperative-sticky), the newest offset at first.
// Owners come from its OnPartitionsAssigned, Revoked and Lost hooks.
type franzMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func joinFranz(env *runEnv, idx int) (member, error) {
	own := func(assign bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			env.eachPart(m, func(p int32) {
				if assign {
					env.tr.assign(idx, p)
				} else {
					env.tr.revoke(idx, p)
				}
			})
		}
	}
	d := env.req.Dialer(30 * time.Second)
	opts := []kgo.Opt{
		kgo.SeedBrokers(env.c.Addrs()...),
		kgo.ClientID(fmt.Sprintf("bench-franz-go-%d", idx)),
		kgo.ConsumerGroup(env.group),
		kgo.ConsumeTopics(env.subscribed()...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.OnPartitionsAssigned(own(true)),
		// Setting OnPartitionsRevoked replaces franz-go's default one,
		// which, with autocommit on, makes a blocking commit of what was
		// polled before the partitions go (at a rebalance, and at Close):
		// kept here as its docs describe it, then the owner noted.
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				env.errs.add(idx, fmt.Errorf("commit on revoke: %w", err))
			}
			own(false)(ctx, cl, m)
		}),
		kgo.OnPartitionsLost(own(false)),
		kgo.Dialer(func(_ context.Context, network, host string) (net.Conn, error) { return d.Dial(network, host) }),
	}
	if env.static > 0 {
		opts = append(opts, kgo.InstanceID(env.instanceID(idx)))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &franzMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fetches := cl.PollFetches(ctx)
			fetches.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) {
					env.errs.add(idx, err)
				}
			})
			fetches.EachRecord(func(r *kgo.Record) {
				env.tr.deliver(idx, env.gp(r.Topic, r.Partition), benchkit.ProducedAt(r.Value), r.Timestamp.UnixNano())
				env.delivered(env.gp(r.Topic, r.Partition), r.Offset)
			})
		}
	}()
	return m, nil
}

// Close as franz-go's docs have it: stop polling, then Close, which
// commits what was polled and leaves the group.
func (m *franzMember) Close() time.Duration {
	start := time.Now()
	m.cancel()
	<-m.done
	m.cl.Close()
	return time.Since(start)
}

package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/listoffsets"
	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/partition"
	"github.com/zkgroup/zkgroup/internal/retry"
	"github.com/zkgroup/zkgroup/internal/saramaconf"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager/assign"
	"github.com/zkgroup/zkgroup/offsets"
	"github.com/zkgroup/zkgroup/subscription"
	"gopkg.in/tomb.v2"
)

// store is what the consumer needs of an offsets store.
type store interface {
	partition.Store
	// Reset: a seek moves the committed offset, also backwards (the
	// partition managers look for it).
	Reset(ctx context.Context, topic string, partition int32, next int64) error
	Close() error
}

// Consumer is one member of a consumer group. Its methods are safe for
// concurrent use. The caller must Close it.
//
// In ModeMerged (the default), Each and Poll take every owned partition's
// messages, each partition's in offset order, the partitions taking turns
// batch by batch; in ModePartitions, EachPartition hands out a stream per
// owned partition. Nothing is handed out until asked: while nobody asks,
// partitions stop fetching once MaxUnacked messages or their fetch buffers
// are outstanding, and nothing is lost. Errors() is buffered
// (Config.ErrorsBufferSize) and closed once the consumer stopped; when
// full, further errors are dropped, logged and counted in Stats: an unread
// Errors() never stalls consumption.
type Consumer struct {
	group   string
	id      string
	sub     *subscription.Subscription
	cfg     *Config
	log     *slog.Logger
	session *zkconn.Session
	meta    metaSource
	client  sarama.Client
	fetcher *fetch.Fetcher // fetches every owned partition
	store   store
	// final gathers the final commits at Close into one round of the
	// Kafka offset store (finalcommits.go).
	final   finalCommits
	commits *partition.Committer // the partitions' routine commits
	// offsetClient is the client of commits and offset queries (ListOffsets),
	// kept off the fetch connections; lister is client with its GetOffset
	// answered over offsetClient, the client of consumer and partitions.
	offsetClient sarama.Client
	lister       *listoffsets.Client
	strategy     assign.Strategy
	health       *gate
	kafka        *kafkaWatch // Kafka reachability and the member's phase (reachability.go)

	batches    chan *partition.Handout // ModeMerged: every partition's batches
	partitions chan *PartitionStream
	errors     chan error
	// finished is closed once everything stopped and the channels were
	// closed (finish); ended just before the channels are closed, once
	// closeErr is final (Err).
	finished chan struct{}
	ended    chan struct{}
	fwd      forwarder // feeds Messages()

	t       tomb.Tomb
	slotsWG sync.WaitGroup
	events  chan slotEvent
	// sessionChanged is signalled (buffered 1) by watchHealth after the
	// session's state changed, for the loop.
	sessionChanged chan struct{}
	// claimWaits is signalled (buffered 1) by a slot whose claim found
	// the partition held by another member, so that the loop checks at
	// once whether the plan saw that holder (claimWaitTooLong) instead of
	// at its next second.
	claimWaiting chan struct{}
	loopDone     chan struct{} // closed when loop returns
	loopAt       atomic.Int64  // unix nanos of the loop's last turn
	// malformedTopics counts the topic nodes reported malformed.
	malformedTopics atomic.Uint64

	mu    sync.Mutex
	slots map[TopicPartition]*slot
	// cb: the rebalance callbacks' state (callbacks.go).
	cb callbacks
	// eachRest: what Each loops left early (see Each).
	eachRest leftovers
	// prefetched holds the consumers opened before the first assignment
	// (see prefetch) until a slot takes them or dropPrefetched closes them.
	prefetched map[TopicPartition]*partition.Prefetched
	members    []string
	// away: the members away that the last plan kept in the group (see
	// static.go); kept: the partitions it held for them.
	away           map[string]awayMember
	kept           map[TopicPartition]bool
	assigned       []TopicPartition
	assignedTopics []string // the subscribed topics with partitions, at the last rebalance
	// memberSubs and relevant: the members' subscriptions and the part of
	// the metadata they select, at the last rebalance (relevant is nil
	// before the first).
	memberSubs []*subscription.Subscription
	relevant   map[string][]metadata.Partition
	applied    bool
	registered bool
	regEpoch   uint64
	// pendingSince: the first trigger not yet acted on; current: the
	// change being applied (nil: none); history: the last maxHistory
	// changes applied, numbered by seq.
	pendingSince       time.Time
	current            *Rebalance
	history            []Rebalance
	seq                uint64
	causes             map[RebalanceCause]uint64
	restartBackoff     map[TopicPartition]*retry.Backoff // lost partitions claimed again
	lastClaimWaitCheck time.Time
	// badNodes: the ZooKeeper nodes reported on Errors() (by path, with
	// the error text), so that each problem is reported once while it
	// lasts; squatted: partitions held by a non-member now.
	badNodes map[string]string
	squatted int
	// strategyPeers: the members publishing another strategy (id to
	// name), as reported; strategyInForce: what the last rebalance
	// computed with ("" none), strategyOldest the member whose strategy
	// that is. See noteStrategiesLocked.
	strategyPeers   map[string]string
	strategyInForce string
	strategyOldest  string
	// oldPeers: the members publishing no strategy whose assignment
	// differs (id to reason), as reported; oldConflicts what the last
	// rebalance found. See noteOldConsumersLocked.
	oldPeers     map[string]string
	oldConflicts []IncompatibleMemberError

	rebalances    atomic.Uint64
	claimWaits    atomic.Int64
	droppedErrors atomic.Uint64
	staleAcks     atomic.Uint64
	restarts      atomic.Uint64
	// Counts of partition managers that have stopped, so that the
	// consumer's totals never go down when a partition moves.
	past     partitionTotals // under mu
	closeErr error           // set before finished is closed
	// cutDrains: CloseTimeout passed; drains are cut short.
	cutDrains atomic.Bool
	// leaving: Close began; a slot that stops keeps its owner node, and
	// closing the session deletes them all, and the registration, in one
	// ZooKeeper transaction (see shutdown).
	leaving atomic.Bool
	// closeBegun: when Close or Interrupt was first called (unix ns, 0
	// before): CloseTimeout counts from then (see closeDeadline).
	closeBegun atomic.Int64
	// leaveForGood: Leave was called; shutdown deletes the restart marker.
	leaveForGood atomic.Bool
}

type slotState int

const (
	claiming slotState = iota
	running
	stopping
)

// slot is one partition this instance wants or still holds.
type slot struct {
	tp     TopicPartition
	state  slotState
	revoke chan struct{} // closed: stop (drain) or cancel the claim
	delay  time.Duration // before claiming (a restart after a loss)
	// pre is the partition's consumer opened before the claim, or nil;
	// the slot goroutine owns it (hands it to the manager or closes it).
	pre *partition.Prefetched
	pm  atomic.Pointer[partition.Manager]
	// waitingSince: unix nanos since the claim waits for another owner;
	// 0 while not waiting. holder: that owner's id (nil while not waiting).
	waitingSince atomic.Int64
	holder       atomic.Pointer[string]
	// seen: who the last plan that assigned the partition saw holding it
	// ("" unowned), while seenSet; under Consumer.mu. A claim that waits
	// on another holder shows that plan was computed from a view of the
	// owners that has changed since (claimWaitTooLong).
	seen    string
	seenSet bool
	// lose: revoked because Kafka is unreachable (leaveForKafka): stop
	// without a drain or a final commit, as a lost partition does.
	lose atomic.Bool
	cb   slotCB // under Consumer.mu (callbacks.go)
}

type slotEvent struct {
	sl      *slot
	started bool // the partition manager started
	done    bool // the slot goroutine ended
}

// Join joins group as a new member consuming sub, coordinated through the
// ZooKeeper ensemble in zookeeper ("host1:2181,host2:2181/chroot", the
// chroot of the Kafka cluster). It validates everything before writing to
// ZooKeeper, connects, discovers brokers, registers, and returns; partitions
// are claimed in the background. A nil cfg means NewConfig().
//
// It blocks for the connections, bounded by the session timeout and by
// ctx: when ctx ends first, Join returns an error wrapping ctx.Err() at
// once; what it had set up is closed in the background (at once for the
// ZooKeeper connection, within the client's own timeouts for a Kafka or
// metadata connection under way), and nothing was registered. ctx only
// bounds Join: cancelling it later does not stop the consumer (Close
// does). The caller must Close the returned Consumer.
func Join(ctx context.Context, group string, sub *subscription.Subscription, zookeeper string, cfg *Config) (*Consumer, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: ctx: nil", ErrConfig)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJoin, err)
	}
	type result struct {
		c   *Consumer
		err error
	}
	// join runs in a goroutine of its own so that Join can return when ctx
	// ends while a client without a context (sarama) connects;
	// ctx ends every wait that can watch it.
	jctx, cancel := context.WithCancel(ctx)
	done := make(chan result, 1)
	go func() {
		c, err := join(jctx, group, sub, zookeeper, cfg)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		cancel()
		return r.c, r.err
	case <-ctx.Done():
		cancel()
		go func() { // the join returns soon; undo it if it succeeded
			if r := <-done; r.c != nil {
				_ = r.c.Close()
			}
		}()
		return nil, fmt.Errorf("%w: %w", ErrJoin, ctx.Err())
	}
}

// join is Join's work, in its steps: check the arguments, connect to
// ZooKeeper, open the Kafka clients and the metadata, the offset store,
// register, and start the consumer's goroutines. Whatever a failed step
// leaves open is closed before join returns.
func join(ctx context.Context, group string, sub *subscription.Subscription, zookeeper string, cfg *Config) (*Consumer, error) {
	cfg, servers, chroot, err := checkJoin(group, sub, zookeeper, cfg)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	id := cfg.InstanceID
	if id == "" {
		id = newInstanceID(group)
	}
	storeLog := log.With("instance", id) // the offset store adds the group itself
	log = log.With("group", group, "instance", id)
	regData, err := registration(sub, saramaConfig(cfg).ClientID, cfg.Strategy.Name(), cfg.RestartGrace)
	if err != nil {
		return nil, fmt.Errorf("%w: subscription: %w", ErrConfig, err)
	}
	c := newConsumer(group, id, sub, cfg, log)
	ok := false
	defer func() {
		if !ok {
			c.closeResources()
		}
	}()
	if err := c.dialZooKeeper(ctx, servers, chroot); err != nil {
		return nil, err
	}
	brokers, err := c.brokerList()
	if err != nil {
		return nil, err
	}
	scfg := saramaConfig(cfg)
	metaErr, err := c.openKafka(brokers, scfg)
	if err != nil {
		return nil, err
	}
	if err := c.openStore(brokers, scfg, storeLog); err != nil {
		return nil, err
	}
	if err := c.metadataFromKafka(brokers, metaErr); err != nil {
		return nil, err
	}
	if err := c.registerMember(ctx, regData); err != nil {
		return nil, err
	}
	log.Info("joined group", "subscription", sub.String(), "brokers", brokers, "strategy", cfg.Strategy.Name())
	ok = true
	c.start(regData)
	return c, nil
}

// checkJoin checks Join's arguments before anything is opened, and returns
// the config to use (NewConfig for nil) and the ZooKeeper servers and
// chroot.
func checkJoin(group string, sub *subscription.Subscription, zookeeper string, cfg *Config) (*Config, []string, string, error) {
	if cfg == nil {
		cfg = NewConfig()
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, "", err
	}
	if group == "" {
		return nil, nil, "", fmt.Errorf("%w: group: empty", ErrConfig)
	}
	if err := zkdata.ValidateNodeName("group", group); err != nil {
		return nil, nil, "", fmt.Errorf("%w: group: %w", ErrConfig, err)
	}
	if sub == nil {
		return nil, nil, "", fmt.Errorf("%w: subscription: nil", ErrConfig)
	}
	servers, chroot, err := zkconn.ParseConnect(zookeeper)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: zookeeper: %w", ErrConfig, err)
	}
	return cfg, servers, chroot, nil
}

// newConsumer returns a Consumer with its channels and maps made and
// nothing opened.
func newConsumer(group, id string, sub *subscription.Subscription, cfg *Config, log *slog.Logger) *Consumer {
	c := &Consumer{
		group: group, id: id, sub: sub, cfg: cfg, log: log, strategy: cfg.Strategy,
		health:   newGate(),
		batches:  make(chan *partition.Handout),
		errors:   make(chan error, cfg.ErrorsBufferSize),
		finished: make(chan struct{}),
		ended:    make(chan struct{}),

		sessionChanged: make(chan struct{}, 1),
		claimWaiting:   make(chan struct{}, 1),
		loopDone:       make(chan struct{}),
		events:         make(chan slotEvent, 1024),
		slots:          map[TopicPartition]*slot{},
		causes:         map[RebalanceCause]uint64{},
		badNodes:       map[string]string{},
		away:           map[string]awayMember{},
		cb:             newCallbacks(),

		restartBackoff: map[TopicPartition]*retry.Backoff{},
	}
	if cfg.Mode == ModePartitions {
		c.partitions = make(chan *PartitionStream, 1024)
	}
	return c
}

// dialZooKeeper opens the member's ZooKeeper session.
func (c *Consumer) dialZooKeeper(ctx context.Context, servers []string, chroot string) error {
	cfg := c.cfg
	var auth []zkconn.Auth
	for _, a := range cfg.Auth {
		auth = append(auth, zkconn.Auth{Scheme: a.Scheme, Credentials: []byte(a.Credentials)})
	}
	var err error
	c.session, err = zkconn.DialContext(ctx, zkconn.Config{
		Servers: servers, Chroot: chroot, SessionTimeout: cfg.SessionTimeout,
		Auth: auth, Logger: c.log, TLS: cfg.ZooKeeperTLS,
		MaxRequest: zkconn.MaxRequestMember, // a member's requests are short (see zkconn's Buffers)
		MaxReply:   cmp.Or(cfg.ZooKeeperMaxReply, DefaultZooKeeperMaxReply), MaxReplyField: "Config.ZooKeeperMaxReply",
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrJoin, err)
	}
	return nil
}

// brokerList returns Config.Brokers, or else the brokers registered in
// ZooKeeper.
func (c *Consumer) brokerList() ([]string, error) {
	if len(c.cfg.Brokers) > 0 {
		return c.cfg.Brokers, nil
	}
	brokers, skipped, err := c.session.Brokers(c.cfg.Listener)
	for _, e := range skipped {
		c.log.Warn("broker registration skipped", "error", e)
	}
	if errors.Is(err, zkconn.ErrNoBrokerRegistered) {
		err = fmt.Errorf("%w (Kafka 4 and other KRaft clusters register none in ZooKeeper; or the chroot is wrong): give the brokers in Config.Brokers", err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJoin, err)
	}
	return brokers, nil
}

// openKafka connects the Kafka clients and the metadata reader, and makes
// the lister and the fetcher. The metadata reader's error is returned
// apart (metaErr): without a Kafka cluster registered in ZooKeeper,
// metadataFromKafka reads the metadata from the brokers instead.
func (c *Consumer) openKafka(brokers []string, scfg *sarama.Config) (metaErr, err error) {
	mcfg := metadata.NewConfig()
	mcfg.Resync = c.cfg.MetadataResync
	mcfg.OnMalformed = c.noteMalformedTopic
	// The fetching client, a second client for what must not queue with
	// the fetches, and the metadata reader connect at the same time: each
	// waits only on its own round trips. (A sarama Broker serves one
	// request at a time, so on the fetching client the coordinator's
	// commits and the ListOffsets of every partition start, two per
	// ConsumePartition, would wait behind fetches, and fetches behind
	// them.) Errors are reported in this order.
	var (
		wg        sync.WaitGroup
		offsetErr error
		watcher   *metadata.Watcher
	)
	wg.Go(func() { c.client, err = sarama.NewClient(brokers, scfg) })
	// The offsets client asks only for the coordinator and the leaders of
	// the partitions it lists: the metadata of those topics, read on first
	// use, not the whole cluster's at start.
	ocfg := *scfg
	ocfg.Metadata.Full = false
	wg.Go(func() { c.offsetClient, offsetErr = sarama.NewClient(brokers, &ocfg) })
	// The metadata reader reads and watches through the member's own
	// session (TLS and credentials included): one ZooKeeper connection.
	wg.Go(func() { watcher, metaErr = metadata.OpenSession(c.session, c.sub.Match, mcfg, c.log) })
	wg.Wait()
	if watcher != nil {
		c.meta = watcher // closed with the rest should Join fail
	}
	if err != nil {
		return metaErr, fmt.Errorf("%w: kafka client for %v: %w", ErrJoin, brokers, err)
	}
	if offsetErr != nil {
		return metaErr, fmt.Errorf("%w: kafka client for offsets: %w", ErrJoin, offsetErr)
	}
	c.lister = listoffsets.Wrap(c.client, listoffsets.New(c.offsetClient))
	// One fetch loop per broker for every owned partition it leads, on
	// connections of its own (package internal/fetch).
	c.fetcher, err = fetch.New(c.client, fetch.ConfigFromSarama(scfg), c.log)
	if err != nil {
		return metaErr, fmt.Errorf("%w: kafka fetcher: %w", ErrJoin, err)
	}
	return metaErr, nil
}

// openStore opens the offset store, bounds it by Kafka's reachability
// (newKafkaWatch) and makes the partitions' committer over it.
func (c *Consumer) openStore(brokers []string, scfg *sarama.Config, storeLog *slog.Logger) error {
	var (
		st  store
		ks  *offsets.KafkaStore
		err error
	)
	switch c.cfg.OffsetStorage {
	case StorageZooKeeper:
		st, err = offsets.NewZooKeeperStore(c.session, c.group, c.session.ACL())
	default:
		kc := offsets.NewKafkaConfig()
		kc.CommitTimeout = c.cfg.Partition.CommitTimeout
		ks, err = offsets.NewKafkaStore(c.offsetClient, c.group, kc, storeLog)
		if err == nil {
			st, c.final.ks = ks, ks
		}
	}
	if err != nil {
		return fmt.Errorf("%w: offset store: %w", ErrJoin, err)
	}
	c.store = c.newKafkaWatch(brokers, scfg, st, ks) // bounded by Kafka's reachability
	if c.commits, err = partition.NewCommitter(c.store, c.cfg.Partition, c.log); err != nil {
		return fmt.Errorf("%w: committer: %w", ErrJoin, err)
	}
	return nil
}

// metadataFromKafka decides where the metadata comes from once the
// metadata reader answered metaErr: with no Kafka cluster registered in
// ZooKeeper and Config.Brokers given, ZooKeeper coordinates only, and the
// topics are learnt from Kafka.
func (c *Consumer) metadataFromKafka(brokers []string, metaErr error) error {
	fromKafka := errors.Is(metaErr, metadata.ErrNoCluster) && len(c.cfg.Brokers) > 0
	switch {
	case fromKafka:
		c.log.Info("no Kafka cluster registered in ZooKeeper; reading metadata from the brokers", "brokers", brokers)
		var err error
		if c.meta, err = newKafkaMeta(c.client, c.sub.Match, c.cfg.MetadataPoll, c.log); err != nil {
			return fmt.Errorf("%w: cluster metadata from %v: %w", ErrJoin, brokers, err)
		}
	case metaErr != nil:
		return fmt.Errorf("%w: cluster metadata: %w", ErrJoin, metaErr)
	}
	return nil
}

// registerMember creates the group's nodes, registers the member and
// writes its restart marker, unless ctx ended first.
func (c *Consumer) registerMember(ctx context.Context, regData []byte) error {
	if err := ensureGroupNodes(c.session, c.group); err != nil {
		return fmt.Errorf("%w: %w", ErrJoin, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrJoin, err) // before anything is registered
	}
	st := c.session.Status()
	if err := register(c.session, c.group, c.id, regData); err != nil {
		return fmt.Errorf("%w: %w", ErrJoin, err)
	}
	if err := writeMarker(c.session, c.group, c.id, regData, c.cfg.RestartGrace); err != nil {
		return fmt.Errorf("%w: %w", ErrJoin, err)
	}
	c.regEpoch = st.Epoch
	c.registered = true
	c.health.set(st.Healthy)
	return nil
}

// start starts the consumer's goroutines: under its tomb the Kafka probe,
// the health watch, the loop and the callbacks' dispatcher; and finish,
// which waits for them and closes everything.
func (c *Consumer) start(regData []byte) {
	c.t.Go(c.runKafkaWatch)
	c.t.Go(c.watchHealth)
	c.t.Go(func() error { return c.loop(regData) })
	c.t.Go(c.dispatchCallbacks)
	go c.finish()
}

func saramaConfig(cfg *Config) *sarama.Config {
	s := saramaconf.From(cfg.Sarama, saramaconf.ClientID)
	if cfg.Rack != "" {
		s.RackID = cfg.Rack
	}
	// A registry of the member's own, keeping only what it reads
	// (saramametrics.go).
	s.MetricRegistry = newKeptMetrics(metricResponses)
	return s
}

// ID returns this member's instance id.
func (c *Consumer) ID() string { return c.id }

// Group returns the group name.
func (c *Consumer) Group() string { return c.group }

// Errors returns errors of the consumer and its partitions
// (*PartitionError for those). See the Consumer doc for its contract.
func (c *Consumer) Errors() <-chan error { return c.errors }

// Ack acks a message handed out by this consumer (the same as msg.Ack()).
// It may be called from any goroutine, in any order. Acking a message of
// a partition this instance no longer owns (or twice) is a counted no-op
// (Stats.StaleAcks counts stale acks however they were made).
func (c *Consumer) Ack(msg *Message) AckResult { return msg.Ack() }

// report passes err to Errors() without blocking.
func (c *Consumer) report(err error) {
	err = publicErr(err)
	select {
	case c.errors <- err:
	default:
		n := c.droppedErrors.Add(1)
		c.log.Warn("Errors() is full; error dropped", "error", err, "dropped", n)
	}
}

// Interrupt starts closing and returns at once: the consumer then drains,
// commits and releases every partition as Close does, and its own
// goroutine ends every loop (Each, EachPartition, each stream's) and
// closes Errors() once everything stopped. Keep processing (and acking)
// until then: the drains wait for the acks of what was handed out. Close still must be called (it returns at once then).
func (c *Consumer) Interrupt() { c.beginClose() }

// Done is closed once the consumer stopped (after Interrupt or Close, or
// the end of its own goroutine) and its channels were closed.
func (c *Consumer) Done() <-chan struct{} { return c.finished }

// Close drains, commits and releases every partition, deregisters, closes
// the connections and then the channels. It is idempotent and blocks until
// all of it is done. It always closes the channels: when CloseTimeout
// passes first, the drains still under way are cut short (what is acked
// is committed, the claims being still held) and Close returns an error
// saying so; no goroutine of the consumer outlives it (a user callback,
// OnRevoked or OnLost, that never returns excepted).
func (c *Consumer) Close() error {
	c.beginClose()
	<-c.finished
	return c.closeErr
}

// beginClose notes when closing began and kills the consumer's tomb. A
// member whose session is suspended (no lease) can commit nothing and
// must not wait for ZooKeeper to come back: its session is interrupted
// (zkconn.Session.Interrupt), so that a loop waiting for a connection in
// a ZooKeeper read (an owner check, a rebalance) returns at once and the
// shutdown begins.
func (c *Consumer) beginClose() {
	c.closeBegun.CompareAndSwap(0, time.Now().UnixNano())
	if c.session != nil {
		if _, _, ok := c.session.Lease(); !ok {
			c.session.Interrupt()
		}
	}
	c.t.Kill(nil)
}

// Leave is Close for a member that does not come back: with
// Config.RestartGrace it first deletes the member's restart marker, so
// that the group moves its partitions as soon as it left instead of after
// the grace. Without RestartGrace it is Close. Idempotent with Close; a
// Leave after Close returns at once (the marker then stays until the
// grace passes).
func (c *Consumer) Leave() error {
	c.leaveForGood.Store(true)
	return c.Close()
}

// closeDeadline is when CloseTimeout passes: counted from Close (or
// Interrupt), or from now when the consumer stops by itself.
func (c *Consumer) closeDeadline() time.Time {
	begun := time.Now()
	if ns := c.closeBegun.Load(); ns != 0 {
		begun = time.Unix(0, ns)
	}
	return begun.Add(c.cfg.CloseTimeout)
}

// finish waits for the consumer's goroutine to end, cuts short the drains
// of partitions still stopping past CloseTimeout, waits for every
// partition, and then closes the connections and the channels: nobody
// sends on them any more.
func (c *Consumer) finish() {
	err := c.t.Wait()
	if err != nil { // CloseTimeout passed with partitions still stopping
		c.cutDrains.Store(true)
		c.mu.Lock()
		for _, sl := range c.slots {
			if pm := sl.pm.Load(); pm != nil {
				pm.CutDrain()
			}
		}
		c.mu.Unlock()
		err = fmt.Errorf("%w (their drains were cut short)", err)
	}
	c.slotsWG.Wait()
	c.closeResources()
	c.closeErr = err
	close(c.ended)
	// In this order: Messages() (its forwarder ends once the batches are
	// closed), then Errors(), then Done().
	close(c.batches)
	c.fwd.stop()
	close(c.errors)
	if c.partitions != nil {
		close(c.partitions)
	}
	close(c.finished)
}

func (c *Consumer) closeResources() {
	if c.meta != nil {
		_ = c.meta.Close()
	}
	if c.fetcher != nil {
		_ = c.fetcher.Close()
	}
	if c.commits != nil {
		_ = c.commits.Close()
	}
	if c.store != nil {
		if err := c.store.Close(); err != nil {
			c.log.Warn("closing the offset store", "error", err)
		}
	}
	if c.offsetClient != nil {
		_ = c.offsetClient.Close()
	}
	if c.client != nil {
		_ = c.client.Close()
	}
	if c.session != nil {
		c.session.Close()
	}
}

package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/leadercache"
	"github.com/zkgroup/zkgroup/internal/listoffsets"
	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/saramaconf"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager/assign"
	"github.com/zkgroup/zkgroup/subscription"
)

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
	// A Consumer composes parts, each owning one concern and its state:
	// conns (the connections and the offset store), groupView (what the
	// last rebalance saw of the group, under mu), rebalanceLog (the
	// rebalances counted and timed, under mu), slotTable (the claims and
	// slots, under mu), outputs (the channels handed to the embedder),
	// closing (the shutdown sequence, see its doc), kafka (Kafka
	// reachability), final (the final commits at Close) and cb (the
	// rebalance callbacks). The loop's own state is loopState (loop.go).
	group    string
	id       string
	sub      *subscription.Subscription
	cfg      *Config
	log      *slog.Logger
	strategy assign.Strategy
	health   *gate
	kafka    *kafkaWatch // Kafka reachability and the member's phase (reachability.go)
	// final gathers the final commits at Close into one round of the
	// Kafka offset store (finalcommits.go).
	final finalCommits

	conns
	outputs
	closing

	// sessionChanged is signalled (buffered 1) by watchHealth after the
	// session's state changed, for the loop.
	sessionChanged chan struct{}
	loopBusy       atomic.Int64  // unix nanos since the loop has been at its current work; 0 while it waits for work
	loopTurns      atomic.Uint64 // the loop's turns (tests count them)

	// mu guards the parts marked "under mu": the view, the rebalance
	// log, the slots, the callbacks, eachRest.
	mu sync.Mutex
	groupView
	rebalanceLog
	slotTable
	// cb: the rebalance callbacks' state (callbacks.go).
	cb callbacks
	// eachRest: what Each loops left early (see Each).
	eachRest leftovers
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
			c.conns.close(c.log)
		}
	}()
	// The steps' durations go in the joined line: a member's first
	// rebalance starts only once it registered.
	var steps joinSteps
	if err := steps.time(&steps.zookeeper, func() error { return c.dialZooKeeper(ctx, cfg, log, servers, chroot) }); err != nil {
		return nil, err
	}
	scfg := saramaConfig(cfg)
	var brokers []string
	var metaErr error
	if err := steps.time(&steps.clients, func() (err error) {
		brokers, metaErr, err = c.openKafka(cfg, scfg)
		return err
	}); err != nil {
		return nil, err
	}
	if err := c.openStore(brokers, scfg, storeLog); err != nil {
		return nil, err
	}
	if err := c.metadataFromKafka(brokers, metaErr); err != nil {
		return nil, err
	}
	if err := steps.time(&steps.leaders, func() error { return c.readLeaders(brokers) }); err != nil {
		return nil, err
	}
	if err := steps.time(&steps.register, func() error { return c.registerMember(ctx, regData) }); err != nil {
		return nil, err
	}
	log.Info("joined group", "subscription", sub.String(), "brokers", brokers, "strategy", cfg.Strategy.Name(), "took", steps)
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
	return &Consumer{
		group: group, id: id, sub: sub, cfg: cfg, log: log, strategy: cfg.Strategy,
		health:         newGate(),
		outputs:        newOutputs(cfg),
		closing:        newClosing(),
		sessionChanged: make(chan struct{}, 1),
		groupView:      newGroupView(),
		rebalanceLog:   rebalanceLog{causes: map[RebalanceCause]uint64{}},
		slotTable:      newSlotTable(),
		cb:             newCallbacks(),
	}
}

// openKafka reads the broker list (brokerList), connects the Kafka
// clients and the metadata reader, and makes the lister and the fetcher.
// The metadata reader's error is returned apart (metaErr): without a Kafka
// cluster registered in ZooKeeper, metadataFromKafka reads the metadata
// from the brokers instead.
func (c *Consumer) openKafka(cfg *Config, scfg *sarama.Config) (brokers []string, metaErr, err error) {
	mcfg := metadata.NewConfig()
	mcfg.Resync = c.cfg.MetadataResync
	mcfg.OnMalformed = c.noteMalformedTopic
	// The metadata reader starts at once, beside the broker list's reads;
	// then the fetching client and a second client for what must not
	// queue with the fetches connect beside it: each waits only on its
	// own round trips (a joining member's requests queue behind the whole
	// group's rebalance reads on a busy ensemble). (A sarama Broker serves
	// one request at a time, so on the fetching client the coordinator's
	// commits and the ListOffsets of every partition start, two per
	// ConsumePartition, would wait behind fetches, and fetches behind
	// them.) Errors are reported in this order.
	var (
		wg        sync.WaitGroup
		offsetErr error
		watcher   *metadata.Watcher
	)
	// The metadata reader reads and watches through the member's own
	// session (TLS and credentials included): one ZooKeeper connection.
	wg.Go(func() { watcher, metaErr = metadata.OpenSession(c.session, c.sub.Match, mcfg, c.log) })
	brokers, listErr := c.brokerList(cfg, c.log)
	if listErr == nil {
		wg.Go(func() {
			// Leaders and epochs are kept by a lean cache of the
			// member's own (package internal/leadercache), not by
			// sarama's client, which would keep every partition of
			// every subscribed topic with its replicas.
			inner, ierr := sarama.NewClient(brokers, scfg)
			if err = ierr; err != nil {
				return
			}
			lc, lerr := leadercache.New(inner, brokers)
			if err = lerr; err != nil {
				_ = inner.Close()
				return
			}
			c.client = lc
		})
		wg.Go(func() { c.offsetClient, offsetErr = sarama.NewClient(brokers, scfg) })
	}
	wg.Wait()
	if watcher != nil {
		c.meta = watcher // closed with the rest should Join fail
	}
	if listErr != nil {
		return nil, metaErr, listErr
	}
	if err != nil {
		return nil, metaErr, fmt.Errorf("%w: kafka client for %v: %w", ErrJoin, brokers, err)
	}
	if offsetErr != nil {
		return nil, metaErr, fmt.Errorf("%w: kafka client for offsets: %w", ErrJoin, offsetErr)
	}
	c.offsetLister = listoffsets.New(c.client)
	c.lister = listoffsets.Wrap(c.client, c.offsetLister)
	// One fetch loop per broker for every owned partition it leads, on
	// connections of its own (package internal/fetch).
	c.fetcher, err = fetch.New(c.client, fetch.ConfigFromSarama(scfg), c.log)
	if err != nil {
		return nil, metaErr, fmt.Errorf("%w: kafka fetcher: %w", ErrJoin, err)
	}
	return brokers, metaErr, nil
}

// readLeaders reads, in one Metadata request, the leaders of the
// subscribed topics that have partitions, which the fetcher needs next
// (each topic's on first use otherwise). It is also the member's first
// Kafka request: brokers that none answer fail Join (sarama.ErrOutOfBrokers)
// before the member registers. Another error (a topic without leader, not
// authorized) is logged; the fetcher reads again what it needs. With no
// subscribed topic yet (a pattern that matches none) there is nothing to
// read and Join asks Kafka nothing; unreachable brokers show later, in
// Errors(), as leaders not found for the partitions of the first topic.
func (c *Consumer) readLeaders(brokers []string) error {
	topics := c.meta.Snapshot().Selected()
	if len(topics) == 0 {
		return nil
	}
	err := c.client.RefreshMetadata(topics...)
	switch {
	case errors.Is(err, sarama.ErrOutOfBrokers):
		return fmt.Errorf("%w: kafka client for %v: %w", ErrJoin, brokers, err)
	case err != nil:
		c.log.Warn("reading the leaders of the subscribed topics failed", "topics", len(topics), "error", err)
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
		var kc kafkaMetaClient = c.client
		if lc, ok := c.client.(*leadercache.Client); ok {
			// Every topic's partitions and replicas: sarama's own cache.
			kc = lc.Client
		}
		km, err := newKafkaMeta(kc, c.sub.Match, c.cfg.MetadataPoll, c.log)
		if err != nil { // c.meta stays nil: a nil *kafkaMeta in it would be closed
			return fmt.Errorf("%w: cluster metadata from %v: %w", ErrJoin, brokers, err)
		}
		c.meta = km
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
	// The member's clients read the metadata of the topics they use
	// (readLeaders, the fetcher, the offsets lookups), never the whole
	// cluster's: sarama's default (Metadata.Full) holds every topic's in
	// each member and reads it all again every RefreshFrequency.
	s.Metadata.Full = false
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

// report passes err to Errors() without blocking. A dropped error is
// counted (Stats.DroppedErrors) and logged at most once per
// dropLogEvery, with the count so far: a broker that fails a fetch of
// thousands of partitions drops as many errors at once.
func (c *Consumer) report(err error) {
	err = publicErr(err)
	select {
	case c.errors <- err:
	default:
		n := c.droppedErrors.Add(1)
		now := max(int64(time.Since(c.born)), 1)
		last := c.dropLogged.Load()
		if (last == 0 || now-last >= int64(dropLogEvery)) && c.dropLogged.CompareAndSwap(last, now) {
			c.log.Warn("Errors() is full; errors dropped", "error", err, "dropped", n)
		}
	}
}

// dropLogEvery: how often report logs that errors were dropped.
const dropLogEvery = time.Second

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

// joinSteps times Join's slow steps, for its log line.
type joinSteps struct {
	zookeeper time.Duration // the session
	clients   time.Duration // the metadata view and the Kafka clients
	leaders   time.Duration // the subscribed topics' leaders
	register  time.Duration // the group's nodes and the member's
}

// time runs step and adds its duration to *d.
func (s *joinSteps) time(d *time.Duration, step func() error) error {
	start := time.Now()
	err := step()
	*d += time.Since(start)
	return err
}

// LogValue groups the steps in the line.
func (s joinSteps) LogValue() slog.Value {
	return slog.GroupValue(slog.Duration("zookeeper", s.zookeeper), slog.Duration("clients", s.clients),
		slog.Duration("leaders", s.leaders), slog.Duration("register", s.register))
}

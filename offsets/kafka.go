package offsets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// KafkaConfig configures a KafkaStore. Build it with NewKafkaConfig and
// change fields; the zero value is invalid. It is a plain value, safe for
// concurrent reads.
type KafkaConfig struct {
	// CommitTimeout bounds each Fetch, Commit and Reset, on top of the
	// caller's ctx: starting to manage the partition, the OffsetCommit
	// round trips, their retries and the verifying fetch. Default 10 s.
	CommitTimeout time.Duration
	// CloseTimeout bounds Close, and a Release whose ctx has no deadline.
	// Default 5 s.
	CloseTimeout time.Duration
	// Verify makes every Commit and Reset read the offset back from the
	// group coordinator and fail unless it equals the offset written.
	// Default true. Without it a commit the coordinator refused with a
	// retriable error (not coordinator, loading) may go unnoticed, which
	// is why disabling it requires sarama's Consumer.Return.Errors.
	Verify bool
}

// NewKafkaConfig returns the defaults: CommitTimeout 10 s, CloseTimeout 5 s,
// Verify true. Pure; does not block.
func NewKafkaConfig() KafkaConfig {
	return KafkaConfig{CommitTimeout: 10 * time.Second, CloseTimeout: 5 * time.Second, Verify: true}
}

// Validate returns an error wrapping ErrInvalid that names the first bad
// field. Pure; does not block.
func (c KafkaConfig) Validate() error {
	switch {
	case c.CommitTimeout <= 0:
		return fmt.Errorf("%w: KafkaConfig.CommitTimeout %v must be positive", ErrInvalid, c.CommitTimeout)
	case c.CloseTimeout <= 0:
		return fmt.Errorf("%w: KafkaConfig.CloseTimeout %v must be positive", ErrInvalid, c.CloseTimeout)
	}
	return nil
}

// KafkaStore keeps a group's offsets in Kafka (__consumer_offsets) through
// sarama's OffsetManager, as a "simple" group: zkgroup coordinates through
// ZooKeeper and never joins the group in Kafka, so commits carry generation
// -1 and an empty member id, which the coordinator accepts for a group
// without members.
//
// Each managed partition gets its own sarama OffsetManager holding a single
// PartitionOffsetManager (POM), created on the first Commit or Reset and
// kept until Release. With auto-commit off, sarama's POM.Close blocks until
// something calls OffsetManager.Commit or Close (sarama issue 2298, still so
// in v1.61.1); owning one OffsetManager per partition lets Release close the
// OffsetManager first, which force-releases the POM without network I/O,
// and keeps each partition's commit errors apart.
//
// Operations on one partition are serialised; different partitions proceed
// in parallel. Every blocking sarama call runs in a goroutine the store
// tracks, and the caller waits for it only until its deadline
// (CommitTimeout, ctx, CloseTimeout). A call abandoned that way keeps the
// partition busy until sarama returns (bounded by the client's Net
// timeouts); when it returns its goroutine closes what Release or Close
// asked to close, then exits. That goroutine, blocked inside sarama, is the
// only one that can outlive Close.
//
// KafkaStore is safe for concurrent use. It does not close the client.
type KafkaStore struct {
	client sarama.Client
	group  string
	cfg    KafkaConfig
	log    *slog.Logger

	mu     sync.Mutex
	parts  map[TopicPartition]*kpart
	closed bool

	calls calls // goroutines running sarama calls

	closeOnce sync.Once
	closeErr  error
}

var _ Store = (*KafkaStore)(nil)

// kpart is one managed partition. busy serialises the goroutines that use
// om and pom; the fields below mu are protected by mu, the others by busy.
type kpart struct {
	tp TopicPartition

	mu        sync.Mutex
	busy      bool
	idle      chan struct{} // closed when busy turns false
	releasing bool          // Release was called: the busy holder closes
	closed    chan struct{} // closed once om and pom are closed

	om    sarama.OffsetManager
	pom   sarama.PartitionOffsetManager
	floor int64 // highest offset this instance committed (or reset to); -1: none
}

// NewKafkaStore returns a store for group that uses client, which must have
// Consumer.Offsets.AutoCommit.Enable false (the store commits itself,
// synchronously). A nil logger discards logs. It does not block and does
// not take ownership of client: close the store before the client.
func NewKafkaStore(client sarama.Client, group string, cfg KafkaConfig, logger *slog.Logger) (*KafkaStore, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: sarama client is nil", ErrInvalid)
	}
	if client.Closed() {
		return nil, fmt.Errorf("%w: sarama client is closed", ErrInvalid)
	}
	if group == "" {
		return nil, fmt.Errorf("%w: group is empty", ErrInvalid)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	conf := client.Config()
	if conf.Consumer.Offsets.AutoCommit.Enable {
		return nil, fmt.Errorf("%w: sarama Config.Consumer.Offsets.AutoCommit.Enable must be false: KafkaStore commits synchronously itself", ErrInvalid)
	}
	if conf.Consumer.Return.Errors && conf.ChannelBufferSize < 1 {
		return nil, fmt.Errorf("%w: sarama Config.ChannelBufferSize %d must be at least 1 with Consumer.Return.Errors (commit errors would block sarama)", ErrInvalid, conf.ChannelBufferSize)
	}
	if !cfg.Verify && !conf.Consumer.Return.Errors {
		return nil, fmt.Errorf("%w: KafkaConfig.Verify false needs sarama Config.Consumer.Return.Errors true, or failed commits go unnoticed", ErrInvalid)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &KafkaStore{
		client: client,
		group:  group,
		cfg:    cfg,
		log:    logger.With("store", "kafka", "group", group),
		parts:  map[TopicPartition]*kpart{},
	}, nil
}

// Fetch reads the partition's committed offset from the group coordinator
// (not from a cache), retrying retriable errors (coordinator moved or
// loading) up to the client's Metadata.Retry.Max times. Errors wrap
// ErrFetch. Safe for concurrent use; blocks until the coordinator answers,
// CommitTimeout or ctx.
func (s *KafkaStore) Fetch(ctx context.Context, topic string, partition int32) (int64, bool, error) {
	if err := s.check(topic, partition, 0, false); err != nil {
		return 0, false, partErr("fetch", topic, partition, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	type result struct {
		next int64
		ok   bool
		err  error
	}
	done := make(chan result, 1)
	if !s.calls.add() {
		return 0, false, partErr("fetch", topic, partition, ErrClosed)
	}
	go func() {
		defer s.calls.done()
		next, ok, err := s.fetch(ctx, topic, partition)
		done <- result{next, ok, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return 0, false, partErr("fetch", topic, partition, fmt.Errorf("%w: %w", ErrFetch, r.err))
		}
		return r.next, r.ok, nil
	case <-ctx.Done():
		select {
		case r := <-done: // finished just in time
			if r.err == nil {
				return r.next, r.ok, nil
			}
		default:
			s.log.Warn("fetch abandoned while sarama is still waiting", "topic", topic, "partition", partition, "err", ctx.Err())
		}
		return 0, false, partErr("fetch", topic, partition, fmt.Errorf("%w: %w", ErrFetch, ctx.Err()))
	}
}

// Commit writes next for the partition and returns once the coordinator
// acknowledged it and (with Verify) a fresh fetch returned it. It first
// starts managing the partition if needed. If next is below an offset this
// instance committed or reset to since it started managing the partition,
// it returns nil without writing. Otherwise it always sends an
// OffsetCommit, retrying up to the client's Consumer.Offsets.Retry.Max
// times. Errors wrap ErrCommit and name topic, partition and offset. Safe
// for concurrent use; blocks until done, CommitTimeout or ctx.
func (s *KafkaStore) Commit(ctx context.Context, topic string, partition int32, next int64) error {
	return s.write(ctx, "commit", topic, partition, next)
}

// Reset writes next like Commit, but also below the committed offset, and
// makes next the new floor for later Commits. Errors wrap ErrCommit. Safe
// for concurrent use; blocks until done, CommitTimeout or ctx.
func (s *KafkaStore) Reset(ctx context.Context, topic string, partition int32, next int64) error {
	return s.write(ctx, "reset", topic, partition, next)
}

func (s *KafkaStore) write(ctx context.Context, op, topic string, partition int32, next int64) error {
	if err := s.check(topic, partition, next, true); err != nil {
		return partErr(op, topic, partition, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	err := s.run(ctx, TopicPartition{topic, partition}, func(p *kpart) error {
		return s.commitOn(ctx, p, next, op == "reset")
	})
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return partErr(op, topic, partition, err)
		}
		return partErr(op, topic, partition, fmt.Errorf("%w: offset %d: %w", ErrCommit, next, err))
	}
	return nil
}

// Release stops managing the partition: it closes the partition's
// OffsetManager and POM. It returns by ctx's deadline (CloseTimeout if ctx
// has none); if an abandoned sarama call still holds the partition, the
// close is left to that call's goroutine, logged, and Release returns an
// error wrapping ErrRelease. Either way the partition is no longer managed:
// a later Commit starts afresh. Releasing an unmanaged partition returns
// nil. Safe for concurrent use.
func (s *KafkaStore) Release(ctx context.Context, topic string, partition int32) error {
	if err := s.check(topic, partition, 0, false); err != nil {
		return partErr("release", topic, partition, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.CloseTimeout)
		defer cancel()
	}
	tp := TopicPartition{topic, partition}
	s.mu.Lock()
	p := s.parts[tp]
	delete(s.parts, tp)
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	s.release(p)
	select {
	case <-p.closed:
		return nil
	case <-ctx.Done():
		if isDone(p.closed) {
			return nil
		}
		s.log.Warn("release abandoned: the partition closes when its sarama call returns", "topic", topic, "partition", partition, "err", ctx.Err())
		return partErr("release", topic, partition, fmt.Errorf("%w: %w", ErrRelease, ctx.Err()))
	}
}

// Close releases every managed partition and waits, up to CloseTimeout, for
// them to close and for every goroutine running a sarama call to return.
// Past the timeout it logs what it abandons and returns an error wrapping
// ErrRelease. It is idempotent (later calls return the first result) and
// does not close the client. Safe for concurrent use.
func (s *KafkaStore) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CloseTimeout)
		defer cancel()
		s.mu.Lock()
		s.closed = true
		parts := s.parts
		s.parts = nil
		s.mu.Unlock()
		s.calls.close()
		for _, p := range parts {
			s.release(p)
		}
		var stuck []string
		for _, p := range parts {
			select {
			case <-p.closed:
			case <-ctx.Done():
				if !isDone(p.closed) {
					stuck = append(stuck, p.tp.String())
				}
			}
		}
		if err := s.calls.wait(ctx); err != nil || len(stuck) > 0 {
			n := s.calls.count()
			s.log.Error("close abandoned sarama calls; they finish when sarama returns",
				"timeout", s.cfg.CloseTimeout, "calls", n, "partitions", stuck)
			s.closeErr = fmt.Errorf("%w: close: %d sarama calls still running after %v (partitions not closed: %v)",
				ErrRelease, n, s.cfg.CloseTimeout, stuck)
		}
	})
	return s.closeErr
}

// check validates arguments and the store's state.
func (s *KafkaStore) check(topic string, partition int32, next int64, checkNext bool) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return checkArgs(topic, partition, next, checkNext)
}

// entry returns the partition's kpart, creating it.
func (s *KafkaStore) entry(tp TopicPartition) (*kpart, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	p := s.parts[tp]
	if p == nil {
		p = &kpart{tp: tp, idle: make(chan struct{}), closed: make(chan struct{}), floor: -1}
		s.parts[tp] = p
	}
	return p, nil
}

// run makes the calling operation the partition's busy holder and runs fn
// in a tracked goroutine, waiting for it until ctx is done. The goroutine
// stays busy holder until fn returns, even if the caller stopped waiting.
func (s *KafkaStore) run(ctx context.Context, tp TopicPartition, fn func(p *kpart) error) error {
	for {
		p, err := s.entry(tp)
		if err != nil {
			return err
		}
		ok, err := p.acquire(ctx)
		if err != nil {
			return err
		}
		if !ok {
			continue // released while we waited: take the new entry
		}
		if err := ctx.Err(); err != nil {
			s.finish(p)
			return err
		}
		if !s.calls.add() {
			s.finish(p)
			return ErrClosed
		}
		done := make(chan error, 1)
		go func() {
			defer s.calls.done()
			err := fn(p)
			s.finish(p)
			done <- err
		}()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			select {
			case err := <-done: // finished just in time
				return err
			default:
			}
			s.log.Warn("operation abandoned while sarama is still busy", "topic", tp.Topic, "partition", tp.Partition, "err", ctx.Err())
			return ctx.Err()
		}
	}
}

// acquire waits until the partition is not busy and marks it busy. It
// returns false if the partition was released meanwhile.
func (p *kpart) acquire(ctx context.Context) (bool, error) {
	for {
		p.mu.Lock()
		if p.releasing {
			p.mu.Unlock()
			return false, nil
		}
		if !p.busy {
			p.busy = true
			p.idle = make(chan struct{})
			p.mu.Unlock()
			return true, nil
		}
		idle := p.idle
		p.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// finish ends the busy holder's turn; if the partition is being released
// and not yet closed, the holder closes it first. Checking releasing and
// clearing busy under one lock hold means that a concurrent release either
// sees the holder still busy (and leaves the close to it) or sees it idle
// (and closes itself).
func (s *KafkaStore) finish(p *kpart) {
	p.mu.Lock()
	if p.releasing && !isDone(p.closed) {
		p.mu.Unlock()
		s.closeSarama(p)
		p.mu.Lock()
	}
	p.busy = false
	close(p.idle)
	p.mu.Unlock()
}

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// release marks p as releasing; if nobody holds it, a tracked goroutine
// closes it now, else the holder does when it finishes.
func (s *KafkaStore) release(p *kpart) {
	p.mu.Lock()
	if p.releasing {
		p.mu.Unlock()
		return
	}
	p.releasing = true
	if p.busy {
		p.mu.Unlock()
		return
	}
	p.busy = true
	p.idle = make(chan struct{})
	p.mu.Unlock()
	s.calls.addAlways()
	go func() {
		defer s.calls.done()
		s.finish(p)
	}()
}

// closeSarama closes the partition's OffsetManager, then its POM. The
// OffsetManager goes first: with auto-commit off its Close force-releases
// the POM (closing the POM's error channel) without network I/O, after
// which POM.Close only drains that channel. The other order blocks forever
// (sarama issue 2298). Called by the busy holder only.
func (s *KafkaStore) closeSarama(p *kpart) {
	defer close(p.closed)
	if p.om == nil {
		return
	}
	p.pom.AsyncClose()
	if err := p.om.Close(); err != nil {
		s.log.Warn("closing offset manager", "topic", p.tp.Topic, "partition", p.tp.Partition, "err", err)
	}
	if err := p.pom.Close(); err != nil {
		s.log.Warn("uncommitted offset errors at release", "topic", p.tp.Topic, "partition", p.tp.Partition, "err", err)
	}
	p.om, p.pom = nil, nil
}

// manage starts managing the partition: its own OffsetManager and POM.
// ManagePartition fetches the committed offset, so it blocks on the
// coordinator. Called by the busy holder only.
func (s *KafkaStore) manage(p *kpart) error {
	if p.om != nil {
		return nil
	}
	om, err := sarama.NewOffsetManagerFromClient(s.group, s.client)
	if err != nil {
		return fmt.Errorf("offset manager: %w", err)
	}
	pom, err := om.ManagePartition(p.tp.Topic, p.tp.Partition)
	if err != nil {
		_ = om.Close()
		return fmt.Errorf("manage partition: %w", err)
	}
	p.om, p.pom = om, pom
	return nil
}

// commitOn writes next through the partition's POM: it sets the POM's
// offset to exactly next and marks it dirty (MarkOffset, then ResetOffset,
// which also lowers an offset the POM cached from the coordinator or from a
// failed attempt), commits synchronously with OffsetManager.Commit, collects
// the POM's errors, and verifies. Called by the busy holder only.
func (s *KafkaStore) commitOn(ctx context.Context, p *kpart, next int64, reset bool) error {
	if err := s.manage(p); err != nil {
		return err
	}
	if !reset && next < p.floor {
		s.log.Debug("commit below committed offset skipped", "topic", p.tp.Topic, "partition", p.tp.Partition, "offset", next, "committed", p.floor)
		return nil
	}
	conf := s.client.Config()
	attempts := conf.Consumer.Offsets.Retry.Max + 1
	for attempt := 1; ; attempt++ {
		p.pom.MarkOffset(next, "")
		p.pom.ResetOffset(next, "")
		p.om.Commit()
		err := s.confirm(ctx, p.tp, next, drain(p.pom))
		if err == nil {
			if reset || next > p.floor {
				p.floor = next
			}
			return nil
		}
		if attempt >= attempts || ctx.Err() != nil {
			return fmt.Errorf("after %d attempts: %w", attempt, err)
		}
		s.log.Debug("commit attempt failed, retrying", "topic", p.tp.Topic, "partition", p.tp.Partition, "offset", next, "attempt", attempt, "err", err)
		if sleep(ctx, backoff(conf, attempt)) != nil {
			return fmt.Errorf("after %d attempts: %w", attempt, err)
		}
	}
}

// drain returns the errors waiting in the POM's error channel without
// blocking (there are some only with sarama's Consumer.Return.Errors).
func drain(pom sarama.PartitionOffsetManager) []error {
	var errs []error
	for {
		select {
		case e, ok := <-pom.Errors():
			if !ok {
				return errs
			}
			errs = append(errs, e)
		default:
			return errs
		}
	}
}

// confirm decides whether a commit attempt of next succeeded: without
// Verify, when sarama reported no error; with Verify, when the coordinator
// returns next (errors sarama reported for an attempt that nonetheless
// landed are logged).
func (s *KafkaStore) confirm(ctx context.Context, tp TopicPartition, next int64, errs []error) error {
	reported := errors.Join(errs...)
	if !s.cfg.Verify {
		return reported
	}
	got, ok, err := s.fetch(ctx, tp.Topic, tp.Partition)
	switch {
	case err != nil:
		return errors.Join(reported, fmt.Errorf("verify: %w", err))
	case !ok:
		return errors.Join(reported, errors.New("verify: the coordinator has no committed offset"))
	case got != next:
		return errors.Join(reported, fmt.Errorf("verify: the coordinator has offset %d", got))
	}
	if reported != nil {
		s.log.Warn("commit reported errors but the coordinator has the offset", "topic", tp.Topic, "partition", tp.Partition, "offset", next, "err", reported)
	}
	return nil
}

// fetch reads the committed offset from the group coordinator with a fresh
// OffsetFetch request, retrying retriable errors.
func (s *KafkaStore) fetch(ctx context.Context, topic string, partition int32) (int64, bool, error) {
	conf := s.client.Config()
	for attempt := 0; ; attempt++ {
		next, ok, retriable, err := s.fetchOnce(topic, partition)
		if err == nil {
			return next, ok, nil
		}
		if !retriable || attempt >= conf.Metadata.Retry.Max || ctx.Err() != nil {
			return 0, false, err
		}
		if sleep(ctx, backoff(conf, attempt+1)) != nil {
			return 0, false, err
		}
	}
}

func (s *KafkaStore) fetchOnce(topic string, partition int32) (next int64, ok, retriable bool, err error) {
	coord, err := s.client.Coordinator(s.group)
	if err != nil {
		return 0, false, true, fmt.Errorf("find coordinator: %w", err)
	}
	req := sarama.NewOffsetFetchRequest(s.client.Config().Version, s.group, map[string][]int32{topic: {partition}})
	resp, err := coord.FetchOffset(req)
	if err != nil {
		_ = s.client.RefreshCoordinator(s.group)
		return 0, false, true, fmt.Errorf("offset fetch from broker %d: %w", coord.ID(), err)
	}
	kerr := resp.Err
	if resp.Version >= 8 && len(resp.Groups) > 0 {
		kerr = resp.Groups[0].Err
	}
	block := resp.GetBlock(topic, partition)
	switch {
	case kerr != sarama.ErrNoError:
	case block == nil:
		return 0, false, true, fmt.Errorf("offset fetch from broker %d: %w", coord.ID(), sarama.ErrIncompleteResponse)
	default:
		kerr = block.Err
	}
	switch kerr {
	case sarama.ErrNoError:
		return block.Offset, block.Offset >= 0, false, nil
	case sarama.ErrNotCoordinatorForConsumer, sarama.ErrConsumerCoordinatorNotAvailable:
		_ = s.client.RefreshCoordinator(s.group)
		retriable = true
	case sarama.ErrOffsetsLoadInProgress, sarama.ErrUnstableOffsetCommit, sarama.ErrRequestTimedOut:
		retriable = true
	}
	return 0, false, retriable, fmt.Errorf("offset fetch from broker %d: %w", coord.ID(), kerr)
}

// backoff is the client's metadata retry backoff for the given attempt.
func backoff(conf *sarama.Config, attempt int) time.Duration {
	if f := conf.Metadata.Retry.BackoffFunc; f != nil {
		return f(attempt, conf.Metadata.Retry.Max)
	}
	return conf.Metadata.Retry.Backoff
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// calls counts the goroutines running sarama calls, so that Close can wait
// for them with a deadline. Safe for concurrent use.
type calls struct {
	mu     sync.Mutex
	n      int
	closed bool
	zero   chan struct{} // closed when n drops to 0; nil when nobody waits
}

// add counts a new call; false once close was called.
func (c *calls) add() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.n++
	return true
}

// addAlways counts a call even after close (for the closing itself).
func (c *calls) addAlways() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *calls) done() {
	c.mu.Lock()
	c.n--
	if c.n == 0 && c.zero != nil {
		close(c.zero)
		c.zero = nil
	}
	c.mu.Unlock()
}

// close refuses further add calls.
func (c *calls) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

func (c *calls) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// wait blocks until no call runs or ctx is done.
func (c *calls) wait(ctx context.Context) error {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.zero == nil {
		c.zero = make(chan struct{})
	}
	z := c.zero
	c.mu.Unlock()
	select {
	case <-z:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

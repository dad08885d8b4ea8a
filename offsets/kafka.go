package offsets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"gopkg.in/tomb.v2"

	"github.com/zkgroup/zkgroup/internal/shrink"
)

// KafkaConfig configures a KafkaStore. Build it with NewKafkaConfig and
// change fields; the zero value is invalid. It is a plain value, safe for
// concurrent reads.
type KafkaConfig struct {
	// CommitTimeout bounds each Fetch, Commit, Reset and CommitBatch, on
	// top of the caller's ctx: the requests, their retries and the
	// verification. Default 10 s.
	CommitTimeout time.Duration
	// CloseTimeout bounds Close, and a Release whose ctx has no deadline.
	// Default 5 s.
	CloseTimeout time.Duration
	// Verify makes every Commit and Reset read the offset back from the
	// group coordinator, write it once more if the coordinator holds
	// another, and fail unless it then holds the offset written. Default
	// true. CommitBatch reads back only what failed, whatever Verify says.
	Verify bool
	// RetryBackoff and RetryBackoffMax bound the jittered, exponentially
	// growing waits between attempts of a request that
	// failed retriably. Defaults 100 ms and 2 s.
	RetryBackoff    time.Duration
	RetryBackoffMax time.Duration
}

// NewKafkaConfig returns the defaults: CommitTimeout 10 s, CloseTimeout 5 s,
// Verify true, RetryBackoff 100 ms up to RetryBackoffMax 2 s. Pure; does not
// block.
func NewKafkaConfig() KafkaConfig {
	return KafkaConfig{
		CommitTimeout: 10 * time.Second, CloseTimeout: 5 * time.Second, Verify: true,
		RetryBackoff: 100 * time.Millisecond, RetryBackoffMax: 2 * time.Second,
	}
}

// Validate returns an error wrapping ErrConfig that names the first bad
// field. Pure; does not block.
func (c KafkaConfig) Validate() error {
	switch {
	case c.CommitTimeout <= 0:
		return fmt.Errorf("%w: KafkaConfig.CommitTimeout %v must be positive", ErrConfig, c.CommitTimeout)
	case c.CloseTimeout <= 0:
		return fmt.Errorf("%w: KafkaConfig.CloseTimeout %v must be positive", ErrConfig, c.CloseTimeout)
	case c.RetryBackoff <= 0:
		return fmt.Errorf("%w: KafkaConfig.RetryBackoff %v must be positive", ErrConfig, c.RetryBackoff)
	case c.RetryBackoffMax < c.RetryBackoff:
		return fmt.Errorf("%w: KafkaConfig.RetryBackoffMax %v must be at least RetryBackoff %v", ErrConfig, c.RetryBackoffMax, c.RetryBackoff)
	}
	return nil
}

// KafkaStore keeps a group's offsets in Kafka (__consumer_offsets) as a
// "simple" group: zkgroup coordinates through ZooKeeper and never joins the
// group in Kafka, so commits carry generation -1 and an empty member id,
// which the coordinator accepts for a group without members. It writes
// OffsetCommit and OffsetFetch requests itself, to the group's coordinator
// (sarama's Client.Coordinator), without sarama's OffsetManager.
//
// Group commit: every write is queued for one goroutine of the store (the
// batcher), which takes everything queued at once and sends it as one
// round: one OffsetCommit request for every partition written (CommitBatch
// entries, Commit and Reset calls alike; one per maxCommitBytes of offset
// records, which Kafka appends in one batch), then, for what must be read back
// (Commit and Reset with Verify, and whatever failed), one OffsetFetch. The
// Fetch calls go to another goroutine (the reader), one OffsetFetch per
// round beside the batcher's, never for a partition being written. What
// arrives while a round is under way goes into the next one. So a
// consumer's commits cost one request per
// interval however many partitions it owns, and the final commits of many
// partitions stopping together share their requests too. A partition is
// written at most once per round; a second write waits for the next.
//
// Per-partition errors in a response fail that partition's entry only.
// Retriable errors (the coordinator moved, is unavailable or loading, the
// connection broke, the request timed out) refresh the coordinator and are
// retried with a jittered backoff until the deadline; unknown topic or
// partition and incomplete responses up to the client's
// Consumer.Offsets.Retry.Max times; the others (authorisation, metadata too
// large, a group with members of its own) fail at once. A round retries
// only while one of its callers still waits.
//
// Every caller waits only until its deadline (CommitTimeout, ctx); a call
// abandoned before its round started is dropped, one abandoned during its
// round leaves the round to finish (bounded by the client's Net timeouts).
// The batcher, blocked inside sarama, is the only goroutine that can
// outlive Close.
//
// KafkaStore is safe for concurrent use. It does not close the client.
type KafkaStore struct {
	client sarama.Client
	group  string
	cfg    KafkaConfig
	log    *slog.Logger

	base   context.Context // canceled by Close: ends a round's retries
	cancel context.CancelFunc
	links  []*commitLink // the batcher's connections for commits (kafka_fence.go; commitLinks)
	t      tomb.Tomb     // the batcher (loop) and the reader (fetchLoop)
	wake   chan struct{} // buffered 1: a write was queued
	// fetchWake (buffered 1): a Fetch was queued, or a round that
	// deferred one ended.
	fetchWake chan struct{}
	takes     atomic.Uint64 // the batcher's scans of the queue (for tests)

	mu        sync.Mutex
	closed    bool
	queue     []*kop                    // waiting for a round
	parts     map[TopicPartition]*kpart // managed partitions
	partsPeak shrink.Peak
	sending   map[TopicPartition]struct{} // written by the round under way
	sendPeak  shrink.Peak                 // of sending
	reading   map[TopicPartition]struct{} // read by the reader's round under way (fetchLoop)
	readPeak  shrink.Peak                 // of reading
	roundDone chan struct{}               // closed when the round under way ends
	hold      *kafkaHold                  // while set, no Commit or Reset is taken into a round (kafka_hold.go)

	stats kafkaCounters

	// tokens holds, per partition, the highest fencing token this store
	// wrote or read (kept across Release: a partition claimed again is
	// checked against what was seen before), under tokensMu (the batcher
	// and the reader). A partition is never written and read at once
	// (sending, reading), so a read never races a write of its token.
	tokensMu sync.Mutex
	tokens   map[TopicPartition]int64

	closeOnce sync.Once
	closeErr  error
}

var _ Store = (*KafkaStore)(nil)

// kpart is one managed partition. floor, the highest offset this instance
// wrote (or reset to) since it started managing the partition (-1: none),
// is used by the batcher only.
type kpart struct {
	floor int64
}

// KafkaStats counts what a KafkaStore did since it was created. It is a
// plain value.
type KafkaStats struct {
	// Rounds of the batcher: each sends one OffsetCommit request per
	// attempt for every 256 KiB of offset records it writes (about 1,500
	// partitions; the commit record of each partition holds the group's and
	// the topic's name).
	Rounds uint64
	// CommitRequests and FetchRequests count the OffsetCommit and
	// OffsetFetch requests sent, retries and verification included.
	CommitRequests, FetchRequests uint64
	// Committed counts partition offsets the coordinator acknowledged;
	// Verified those read back equal; Recommitted those written again
	// because the coordinator held another; Failed the entries of Commit,
	// Reset and CommitBatch that failed.
	Committed, Verified, Recommitted, Failed uint64
	// Fenced counts OffsetCommit requests not sent, or torn down
	// unanswered, because their deadline (the writer's lease) passed.
	Fenced uint64
	// Regressions counts committed offsets read from the coordinator
	// whose fencing token is older than one this store wrote or read
	// before for the partition: a commit of an older claim landed after
	// one of a newer claim (see FormatToken). Each is logged.
	Regressions uint64
	// Coordinator is the address of the group coordinator the store's
	// commit connection is open to ("" before the first commit and after
	// the connection failed).
	Coordinator string
}

type kafkaCounters struct {
	rounds, commitRequests, fetchRequests    atomic.Uint64
	committed, verified, recommitted, failed atomic.Uint64
	fenced, regressions                      atomic.Uint64
}

// NewKafkaStore returns a store for group that uses client, and starts its
// batcher. A nil logger discards logs; the store adds the attributes store
// and group to it, so pass one without them. It does not block and does not take
// ownership of client: close the store before the client.
//
// Give the store a sarama client of its own, not the one the consumer
// fetches with: sarama sends every request to a broker over one
// connection, in order, so commits and reads of offsets queued behind
// fetches to the coordinator (or fetches behind them) would stall each
// other. The store works with a shared client too, only slower under load.
// The client's Consumer.Offsets.AutoCommit setting does not matter (no
// sarama OffsetManager is used); its Version chooses the request versions,
// its Net timeouts bound each request, and Consumer.Offsets.Retry.Max the
// retries of non-coordinator errors.
func NewKafkaStore(client sarama.Client, group string, cfg KafkaConfig, logger *slog.Logger) (*KafkaStore, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: sarama client is nil", ErrConfig)
	}
	if client.Closed() {
		return nil, fmt.Errorf("%w: sarama client is closed", ErrConfig)
	}
	if group == "" {
		return nil, fmt.Errorf("%w: group is empty", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &KafkaStore{
		client:    client,
		group:     group,
		cfg:       cfg,
		log:       logger.With("store", "kafka", "group", group),
		wake:      make(chan struct{}, 1),
		fetchWake: make(chan struct{}, 1),
		parts:     map[TopicPartition]*kpart{},
		sending:   map[TopicPartition]struct{}{},
		reading:   map[TopicPartition]struct{}{},
		tokens:    map[TopicPartition]int64{},
	}
	for range commitLinks {
		s.links = append(s.links, newCommitLink(*client.Config()))
	}
	s.base, s.cancel = context.WithCancel(context.Background())
	s.t.Go(s.loop)
	s.t.Go(s.fetchLoop)
	return s, nil
}

// Fetch reads the partition's committed offset from the group coordinator
// (not from a cache), in the reader's next round together with the other
// Fetch calls (after the write round under way, if that writes the
// partition). ok is false when nothing is committed. Errors wrap ErrFetchOffset (or
// ErrClosed). Safe for concurrent use; blocks until the coordinator
// answers, CommitTimeout or ctx.
func (s *KafkaStore) Fetch(ctx context.Context, topic string, partition int32) (int64, bool, error) {
	if err := s.check(topic, partition, 0, false); err != nil {
		return 0, false, partErr("fetch", topic, partition, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	o := newOp(ctx, kopFetch, false, 1)
	o.items[0].tp = TopicPartition{topic, partition}
	err := s.submit(ctx, o)
	if err == nil {
		err = o.items[0].err
	}
	switch {
	case errors.Is(err, ErrClosed):
		return 0, false, partErr("fetch", topic, partition, err)
	case err != nil:
		return 0, false, partErr("fetch", topic, partition, fmt.Errorf("%w: %w", ErrFetchOffset, err))
	}
	return o.items[0].next, o.items[0].ok, nil
}

// Commit writes next for the partition and returns once the coordinator
// acknowledged it and (with Verify) an OffsetFetch returned it; if the
// coordinator holds another offset, it writes next once more and reads it
// back again. It starts managing the partition if needed. If next is below
// an offset this instance committed or reset to since it started managing
// the partition, it returns nil without writing; otherwise it always sends
// next. Errors wrap ErrCommit and name topic, partition and offset. Safe
// for concurrent use; blocks until done, CommitTimeout or ctx.
func (s *KafkaStore) Commit(ctx context.Context, topic string, partition int32, next int64) error {
	return s.write(ctx, kopCommit, topic, partition, next)
}

// Reset writes next like Commit, but also below the committed offset, and
// makes next the new floor for later Commits. Errors wrap ErrCommit. Safe
// for concurrent use; blocks until done, CommitTimeout or ctx.
func (s *KafkaStore) Reset(ctx context.Context, topic string, partition int32, next int64) error {
	return s.write(ctx, kopReset, topic, partition, next)
}

func (s *KafkaStore) write(ctx context.Context, kind kopKind, topic string, partition int32, next int64) error {
	name := kind.String()
	if err := s.check(topic, partition, next, true); err != nil {
		return partErr(name, topic, partition, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	o := newOp(ctx, kind, s.cfg.Verify, 1)
	o.single = true
	o.items[0].tp, o.items[0].next = TopicPartition{topic, partition}, next
	o.items[0].token = tokenFrom(ctx)
	err := s.submit(ctx, o)
	if err == nil {
		err = o.items[0].err
	}
	return s.writeErr(name, o.items[0].tp, next, err)
}

// writeErr wraps the error of one written entry for the caller.
func (s *KafkaStore) writeErr(op string, tp TopicPartition, next int64, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrClosed):
		return partErr(op, tp.Topic, tp.Partition, err)
	}
	s.stats.failed.Add(1)
	return partErr(op, tp.Topic, tp.Partition, fmt.Errorf("%w: offset %d: %w", ErrCommit, next, err))
}

// CommitBatch writes the entries' offsets in the next round, all in one
// OffsetCommit request (besides retries), without reading them back unless
// a write failed. Each entry is treated as by Commit: it starts managing
// the partition, is skipped below this instance's floor, and fails alone
// with an error wrapping ErrCommit (or ErrConfig, ErrClosed) that names
// it. See Store.CommitBatch. Safe for concurrent use; blocks until done,
// CommitTimeout or ctx.
func (s *KafkaStore) CommitBatch(ctx context.Context, batch []Offset) []error {
	errs, valid := checkBatch(batch, func(topic string, partition int32, next int64) error {
		return s.check(topic, partition, next, true)
	})
	if valid == 0 {
		return errs
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	o := newOp(ctx, kopCommit, false, valid)
	j := 0
	for i, e := range batch {
		if errs[i] == nil {
			o.items[j].tp, o.items[j].next, o.items[j].token = e.TopicPartition, e.Next, e.Token
			j++
		}
	}
	err := s.submit(ctx, o)
	j = 0
	for i, e := range batch {
		if errs[i] != nil {
			continue
		}
		ierr := err
		if ierr == nil {
			ierr = o.items[j].err
		}
		errs[i] = s.writeErr("commit", e.TopicPartition, e.Next, ierr)
		j++
	}
	return errs
}

// Release stops managing the partition: it forgets the partition's floor
// and, if the round under way writes the partition, waits for that round
// to end, until ctx's deadline (CloseTimeout if ctx has none). Past it,
// Release logs and returns an error wrapping ErrRelease: a write of the
// partition sent by this instance may still land. Either way the partition
// is no longer managed: a later Commit starts afresh. Releasing an
// unmanaged partition returns nil. Safe for concurrent use.
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
	delete(s.parts, tp)
	s.parts = shrink.Map(s.parts, &s.partsPeak)
	var done chan struct{}
	if _, busy := s.sending[tp]; busy {
		done = s.roundDone
	}
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		if isDone(done) {
			return nil
		}
		s.log.Warn("release abandoned: a write of the partition is still waiting for the coordinator", "topic", topic, "partition", partition, "error", ctx.Err())
		return partErr("release", topic, partition, fmt.Errorf("%w: %w", ErrRelease, ctx.Err()))
	}
}

// Close fails what is queued with ErrClosed, ends the retries of the round
// under way and waits, up to CloseTimeout, for the batcher to end. Past the
// timeout (the batcher waits inside sarama) it logs and returns an error
// wrapping ErrRelease; the batcher ends when sarama returns. It is
// idempotent (later calls return the first result) and does not close the
// client. Safe for concurrent use.
func (s *KafkaStore) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.hold = nil
		queued := s.queue
		s.queue = nil
		clear(s.parts)
		busy := len(s.sending)
		s.mu.Unlock()
		for _, o := range queued {
			if o.state.CompareAndSwap(kopQueued, kopTaken) {
				o.fail(ErrClosed)
			}
		}
		s.cancel()
		for _, l := range s.links {
			l.abort() // a commit under way fails now, sending nothing more
		}
		s.t.Kill(nil)
		timer := time.NewTimer(s.cfg.CloseTimeout)
		defer timer.Stop()
		select {
		case <-s.t.Dead():
		case <-timer.C:
			s.log.Error("close abandoned a round still waiting for sarama; it ends when sarama returns",
				"timeout", s.cfg.CloseTimeout, "partitions", busy)
			s.closeErr = fmt.Errorf("%w: close: a round writing %d partitions still waits for sarama after %v",
				ErrRelease, busy, s.cfg.CloseTimeout)
		}
	})
	return s.closeErr
}

// Stats returns the store's counters. Safe for concurrent use; does not
// block.
func (s *KafkaStore) Stats() KafkaStats {
	c := &s.stats
	return KafkaStats{
		Rounds: c.rounds.Load(), CommitRequests: c.commitRequests.Load(), FetchRequests: c.fetchRequests.Load(),
		Committed: c.committed.Load(), Verified: c.verified.Load(), Recommitted: c.recommitted.Load(), Failed: c.failed.Load(),
		Fenced: c.fenced.Load(), Regressions: c.regressions.Load(),
		Coordinator: s.coordinator(),
	}
}

// coordinator returns the address the first commit link is connected to
// ("" when none is, and for a store not made by NewKafkaStore).
func (s *KafkaStore) coordinator() string {
	if len(s.links) == 0 {
		return ""
	}
	return s.links[0].coordinator()
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

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// sawToken records a fencing token of the partition's commit that this
// store wrote or read (how: "written", "read") and counts and logs a
// regression when one it read is older than the highest seen. Safe for
// concurrent use.
func (s *KafkaStore) sawToken(tp TopicPartition, token, next int64, how string) {
	s.tokensMu.Lock()
	defer s.tokensMu.Unlock()
	seen := s.tokens[tp]
	if token >= seen {
		s.tokens[tp] = token
		return
	}
	if how == "read" {
		s.stats.regressions.Add(1)
		s.log.Error("committed offset written under an older claim than one seen before: a stale commit landed",
			"topic", tp.Topic, "partition", tp.Partition, "offset", next, "token", token, "seen_token", seen)
	}
}

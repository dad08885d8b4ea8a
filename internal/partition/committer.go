package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgroup/zkgroup/internal/shrink"
	"github.com/zkgroup/zkgroup/offsets"
	public "github.com/zkgroup/zkgroup/partition"
	"gopkg.in/tomb.v2"
)

// ErrCommitterClosed: a Manager was started with a Committer already
// closed.
var ErrCommitterClosed = errors.New("partition: committer closed")

// Committer commits the acked watermarks of a consumer's Managers, all of
// them in one Store.CommitBatch call per Config.CommitInterval: one
// OffsetCommit request (or ZooKeeper transaction) per interval, however
// many partitions the consumer owns, where a committer per partition cost
// one request (and one read-back) per partition and interval.
//
// Every interval it visits each registered Manager (but those found
// quiet: nothing held, nothing to commit, until they deliver again) and
// takes the acked watermark if it moved past what is committed and the
// Manager's Fence allows acting as owner; a Manager whose final commit (Stop) is under way
// is left out. While a Manager's offset is in the batch, its final commit
// waits, so two commits of one partition never race (and so never move
// it backwards). Each entry's error goes to its Manager: counted in
// Stats.CommitErrors, reported as an *Error with Op "commit". The same
// visit releases the offset-tracking memory of partitions that were idle
// for a whole interval. While every Manager is quiet the committer does
// not wake at all; the first one stirred starts the intervals again.
//
// A Manager registers itself at New (Params.Committer) and leaves at
// Stop. Create one Committer per consumer, with the store the Managers
// use; it runs one goroutine of its own. Safe for concurrent use. The
// creator calls Close once the Managers have stopped.
type Committer struct {
	store Store
	cfg   Config // the consumer's: CommitInterval and CommitTimeout used
	log   *slog.Logger

	ctx    context.Context // canceled by Close: ends a batch under way
	cancel context.CancelFunc
	t      tomb.Tomb

	mu       sync.Mutex
	closed   bool
	halted   bool // Halt: no round gathers offsets any more
	managers map[*Manager]struct{}
	// active: the registered Managers that are not quiet (Manager.quiet),
	// the only ones a round visits, so that idle partitions cost a round
	// nothing. A Manager leaves it when a visit finds it quiet
	// (deactivate) and comes back when stirred (activate), both under
	// its mu.
	active map[*Manager]struct{}
	// The peaks of managers and active: a round ranges over active's
	// room, not only its entries.
	managersPeak, activePeak shrink.Peak

	flushes chan *flushRequest
	// wake is signalled (buffered 1) when active gains its first entry:
	// the loop's ticker stops while active is empty, so that a consumer
	// whose partitions are all quiet costs no wakeup per interval.
	wake chan struct{}
	// sleeping: the loop's ticker is stopped (for tests).
	sleeping atomic.Bool

	batches, committed, failed atomic.Uint64
}

// CommitterStats counts what a Committer did. It is a plain value.
type CommitterStats struct {
	// Batches is the number of CommitBatch calls (intervals with
	// something to commit), Committed and Failed their entries that
	// succeeded and failed.
	Batches, Committed, Failed uint64
	// Managers is the number of Managers registered now.
	Managers int
}

// NewCommitter starts a committer that commits through store every
// cfg.CommitInterval, each batch bounded by cfg.CommitTimeout (the rest of
// cfg is not used). A nil logger discards logs. It does not block; the
// caller must Close it.
func NewCommitter(store Store, cfg Config, logger *slog.Logger) (*Committer, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: Committer store: nil", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Committer{
		store: store, cfg: cfg, log: logger, managers: map[*Manager]struct{}{}, active: map[*Manager]struct{}{},
		flushes: make(chan *flushRequest), wake: make(chan struct{}, 1),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.t.Go(c.loop)
	return c, nil
}

// Close stops the committer: a batch under way is canceled (its entries
// fail and stay uncommitted; the Managers' final commits are theirs). It
// blocks until the committer's goroutine has ended, is idempotent, and
// does not close the store. Managers still registered stay valid: their
// Stop still commits finally. Starting a Manager with a closed Committer
// fails with ErrCommitterClosed.
func (c *Committer) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.t.Kill(nil)
	return c.t.Wait()
}

// Halt stops the rounds, routine and Commit's, without ending the one
// under way (Close cancels it): a round that has gathered its offsets
// goes on to the store's answer, none gathers any after Halt returned
// (Commit calls then return ErrCommitterClosed). A consumer that stops
// its Managers for good halts it first, so that no routine round is
// started for partitions whose final commits are coming: each of those
// would wait for it. Idempotent, safe for concurrent use; it does not
// block. Close must still be called.
func (c *Committer) Halt() {
	c.mu.Lock()
	c.halted = true
	c.mu.Unlock()
}

// Stats returns the committer's counters. Safe for concurrent use; does not
// block on I/O.
func (c *Committer) Stats() CommitterStats {
	c.mu.Lock()
	n := len(c.managers)
	c.mu.Unlock()
	return CommitterStats{Batches: c.batches.Load(), Committed: c.committed.Load(), Failed: c.failed.Load(), Managers: n}
}

// add registers m; false once the committer is closed.
func (c *Committer) add(m *Manager) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.managers[m] = struct{}{}
	c.managersPeak.Note(len(c.managers))
	c.activateLocked(m)
	return true
}

// remove unregisters m. A batch already under way may still hold m's
// offset; m's final commit waits for it (commitMu).
func (c *Committer) remove(m *Manager) {
	c.mu.Lock()
	delete(c.managers, m)
	delete(c.active, m)
	c.managers = shrink.Map(c.managers, &c.managersPeak)
	c.active = shrink.Map(c.active, &c.activePeak)
	c.mu.Unlock()
}

// activate makes the rounds visit m again, if it is registered.
func (c *Committer) activate(m *Manager) {
	c.mu.Lock()
	if _, ok := c.managers[m]; ok {
		c.activateLocked(m)
	}
	c.mu.Unlock()
}

// activateLocked adds m to active, waking the loop if it was empty. c.mu
// held.
func (c *Committer) activateLocked(m *Manager) {
	if len(c.active) == 0 {
		select {
		case c.wake <- struct{}{}:
		default: // the loop has one to read already
		}
	}
	c.active[m] = struct{}{}
	c.activePeak.Note(len(c.active))
}

// idle reports whether no Manager is in the rounds.
func (c *Committer) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.active) == 0
}

// deactivate leaves m out of the rounds until it is activated again.
func (c *Committer) deactivate(m *Manager) {
	c.mu.Lock()
	delete(c.active, m)
	c.active = shrink.Map(c.active, &c.activePeak)
	c.mu.Unlock()
}

// loop commits every interval until the committer is closed. After a
// round that leaves no Manager in the rounds (all quiet) its ticker stops
// until one is stirred (wake): the first round then comes an interval
// after that.
func (c *Committer) loop() error {
	tick := time.NewTicker(c.cfg.CommitInterval)
	defer tick.Stop()
	var r round
	for {
		select {
		case <-c.t.Dying():
			return nil
		case <-tick.C:
			c.commit(&r, nil)
			if c.idle() {
				tick.Stop()
				c.sleeping.Store(true)
			}
		case <-c.wake:
			if c.sleeping.Load() {
				tick.Reset(c.cfg.CommitInterval)
				c.sleeping.Store(false)
			}
		case f := <-c.flushes:
			f.done <- c.commit(&r, f)
		}
	}
}

// flushRequest asks the committer's goroutine for a round now.
type flushRequest struct {
	ctx  context.Context
	only *Manager // nil: every registered Manager
	done chan error
}

// Commit commits the acked watermark of every registered Manager now, in
// one batch like a routine round (the next one follows at its usual
// time), and returns once the store answered (durable: the store's
// CommitBatch returned) or ctx ends. A Manager whose final commit is under
// way is left to it. The error joins one *Error (Op "commit") per
// partition that failed, or that had acks to commit while its Fence did
// not allow committing (wrapping ErrLost); ErrCommitterClosed after
// Close. Safe for concurrent use.
func (c *Committer) Commit(ctx context.Context) error { return c.flush(ctx, nil) }

func (c *Committer) flush(ctx context.Context, only *Manager) error {
	f := &flushRequest{ctx: ctx, only: only, done: make(chan error, 1)}
	select {
	case c.flushes <- f:
	case <-c.t.Dying():
		return ErrCommitterClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-f.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// round holds the slices of one interval's batch, reused across
// intervals. Used by the committer's goroutine only.
type round struct {
	managers []*Manager
	owners   []*Manager
	batch    []offsets.Offset
}

// commit takes the committable offset of every registered manager (or
// of f.only, when set) and commits them in one batch. f is nil for a
// routine round, or the Commit call being served. It returns the
// partitions' errors (for a Commit call: a routine round reports them
// through the managers only).
func (c *Committer) commit(r *round, f *flushRequest) error {
	parent, only := c.ctx, (*Manager)(nil)
	if f != nil {
		ctx, cancel := context.WithCancel(f.ctx)
		defer cancel()
		defer context.AfterFunc(c.ctx, cancel)()
		parent, only = ctx, f.only
	}
	c.mu.Lock()
	if c.halted {
		c.mu.Unlock()
		if f != nil {
			return ErrCommitterClosed
		}
		return nil
	}
	r.managers = r.managers[:0]
	if only == nil {
		for m := range c.active {
			r.managers = append(r.managers, m)
		}
	} else if _, ok := c.managers[only]; ok {
		r.managers = append(r.managers, only)
	}
	c.mu.Unlock()
	var errs []error
	r.owners, r.batch = r.owners[:0], r.batch[:0]
	var until time.Time // the earliest end of the batch's leases
	for _, m := range r.managers {
		next, u, ok, refused := m.beginCommit()
		if ok && (until.IsZero() || u.Before(until)) {
			until = u
		}
		if ok {
			r.owners = append(r.owners, m)
			r.batch = append(r.batch, offsets.Offset{TopicPartition: offsets.TopicPartition{Topic: m.topic, Partition: m.partition}, Next: next, Token: m.p.Fence.Token()})
		} else if refused && f != nil {
			errs = append(errs, &Error{Topic: m.topic, Partition: m.partition, Op: public.OpCommit,
				Err: fmt.Errorf("%w: offset %d not committed: %w", ErrCommit, next, ErrLost)})
		}
	}
	clear(r.managers) // do not keep stopped managers alive
	if len(r.batch) == 0 {
		return errors.Join(errs...)
	}
	c.batches.Add(1)
	// The batch must not take effect once a lease it was taken under
	// ended: the stores send nothing after the deadline and tear down a
	// connection whose request is unanswered then.
	ctx, cancel := leaseContext(parent, c.cfg.CommitTimeout, until)
	results := c.store.CommitBatch(ctx, r.batch)
	cancel()
	failed := 0
	var first error // the first failure's, for the log
	for i, m := range r.owners {
		var err error
		if i < len(results) {
			err = results[i]
		} else {
			err = fmt.Errorf("the store returned %d results for %d offsets", len(results), len(r.batch))
		}
		if err != nil {
			failed++
			e := &Error{Topic: m.topic, Partition: m.partition, Op: public.OpCommit,
				Err: commitError(r.batch[i].Next, err)}
			if first == nil {
				first = e
			}
			errs = append(errs, e)
		}
		m.endCommit(r.batch[i].Next, err)
	}
	c.committed.Add(uint64(len(r.batch) - failed))
	c.failed.Add(uint64(failed))
	if failed > 0 {
		c.log.Warn("commits failed", "partitions", len(r.batch), "failed", failed, "first", first)
	}
	clear(r.owners)
	return errors.Join(errs...)
}

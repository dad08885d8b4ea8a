package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgroup/zkgroup/internal/retry"
	"github.com/zkgroup/zkgroup/internal/tracker"
	"github.com/zkgroup/zkgroup/offsets"
	public "github.com/zkgroup/zkgroup/partition"
)

// Store is where a partition's committed offset lives (offsets.Store
// satisfies it; see it for the contract of each method). Offsets follow
// Kafka's convention: the next offset to read. A Manager reads the
// committed offset with Fetch when it starts (unless its Prefetched says
// where a read after the claim found it), makes its final commit with
// Commit (synchronous, read back by the store) and calls Release when it
// stops; the Committer makes the routine commits of every Manager with
// CommitBatch. Implementations must be safe for concurrent use.
type Store interface {
	Fetch(ctx context.Context, topic string, partition int32) (next int64, ok bool, err error)
	Commit(ctx context.Context, topic string, partition int32, next int64) error
	CommitBatch(ctx context.Context, batch []offsets.Offset) []error
	Release(ctx context.Context, topic string, partition int32) error
}

// OffsetResolver finds the oldest or newest offset of a partition;
// sarama.Client satisfies it.
type OffsetResolver interface {
	GetOffset(topic string, partition int32, time int64) (int64, error)
}

// Params are what a Manager needs; all but Logger and Report are required.
type Params struct {
	Topic     string
	Partition int32
	// CloseBatches closes Batches after Stop (here, beside Partition, so
	// that the Manager keeps its size class).
	CloseBatches bool
	Client       OffsetResolver // resolves oldest/newest offsets (a sarama.Client)
	// Fetcher fetches the partition (the consumer's fetch.Fetcher, see
	// FetcherOf and fetchpath.go); shared by the consumer's managers.
	Fetcher Fetcher
	Store   Store
	// Committer makes the routine commits, every Config.CommitInterval,
	// of every Manager of the consumer in one batch: one per consumer,
	// on the same Store.
	Committer *Committer
	// BeforeDrain, optional, is called by a Stop with drain once nothing
	// more is handed out (the fetch loop ended, Handout.Pass refuses), before
	// the drain waits for acks: the place to abandon what was handed out in
	// a batch but never reached the user (Consumer.Each's leftovers).
	BeforeDrain func()
	// Halted, optional, is called by every Stop, with or without drain,
	// once nothing more is handed out (halt is closed), before the drain
	// and before Stop returns: the place to wait for a hand-off of one of
	// the manager's messages under way elsewhere (Consumer.Messages).
	Halted func()
	// Prefetched, optional, is this partition's Fetch opened before the
	// claim (see Prefetched). The Manager owns it from New on, also
	// when New fails.
	Prefetched *Prefetched
	Fence      Fence
	// Batches receives the messages as batches (see Handout): one send per
	// batch, taken as fetched and as far as MaxUnacked allows. It may be
	// shared by several Managers (the merged stream), or be this
	// partition's alone; CloseBatches closes it after Stop.
	Batches chan<- *Handout
	// Turns, optional, bounds the fetch sessions of the Managers sharing
	// Batches that run at once (see Turns); one for all of them.
	Turns *Turns
	// StaleAcks, if set, counts acks of this Manager's messages made after
	// it stopped (also counted in Stats.StaleAcks, which ends with the
	// Manager): the consumer's total over every ownership.
	StaleAcks *atomic.Uint64
	Config    Config
	Logger    *slog.Logger
	// Report receives errors worth telling the user (never blocks: the
	// consumer drops them when its Errors() channel is full).
	Report func(error)
}

var generations atomic.Uint64

// Manager consumes one owned partition. Its methods are safe for concurrent
// use. It runs on goroutines that are not its own: the caller of Run, or
// of each Step (the consumer manager's slot goroutines, the first of
// which also claims the partition, the last releases it; a goroutine of
// the test in tests), and on none while it is parked. The consumer manager must call
// Stop once it no longer owns the partition (or Done is closed).
type Manager struct {
	topic     string
	partition int32
	// cut is set by CutDrain, which then wakes the drain (space): a drain
	// under way ends at once. (Here, beside partition, the Manager fits a
	// 768-byte size class.)
	cut atomic.Bool
	gen uint64
	p   Params
	cfg Config
	log *slog.Logger

	// dying is closed by kill (Halt, Stop, the end of Run): Done.
	dying     chan struct{}
	dyingOnce sync.Once
	// readCut cancels the read of the committed offset under way
	// (startPosition), if any: kill calls it. Not a context canceled with
	// dying, from which the read's would derive: that context would keep
	// a map of children and a channel (320 bytes) for the manager's life.
	readCut atomic.Pointer[context.CancelFunc]
	// ran is set by the first of Step (Run) and Stop. A step runs with
	// runMu held, so that a Stop waits for a step under way, and a Run
	// after Stop returns at once.
	runMu sync.Mutex
	ran   bool
	// The run between two steps (Step, park.go), under runMu: parkedRun
	// while it is parked in the fetch session fp (next: the first offset
	// not handed out); runTaken once Stop ended a parked run, with the
	// outcome (runErr) the next Step returns. backoff paces failed starts
	// of fetching.
	parkedRun bool
	runTaken  bool
	turn      bool
	// fetchBelow: the session's Fetch starts below the position (a
	// prefetch that covers it, see openFetch). The run's only.
	fetchBelow bool
	runErr     error
	fp         Fetch
	next       int64
	backoff    *retry.Backoff
	// state is runParked while the run is parked, runWaiting while it
	// waits for a turn (Turns); whoever makes it runActive again calls
	// resume (Step's), set before. turn: the run holds one of Turns'.
	state  atomic.Int32
	resume func()

	// mu guards the tracker and the fields below it. The tracker holds the
	// messages handed out and, while a batch is being handed out, the rest
	// of that batch (taken for delivery under one lock, see the fetch session); those
	// are truncated when fetching stops.
	mu        sync.Mutex
	tracker   *tracker.Tracker // nil until the start position is known
	abandoned map[int64]bool   // handed out, will never be acked (see Abandon)
	stopped   bool             // acks are stale from now on
	verified  bool             // committed was read from the store, or written and read back
	committed int64            // last committed next-offset (-1: unknown)
	idleSeen  uint64           // delivered count when the Committer last found nothing outstanding
	acks      uint64           // acks counted
	dupAcks   uint64           // duplicate and unknown acks
	space     chan struct{}    // buffered 1: an ack arrived
	folded    int64            // acks of the in-order path are folded up to here (see fastack.go)
	// ackNext and ackEnd are the in-order ack path's window (fastack.go);
	// ackNext is -1 while the path is off.
	ackNext, ackEnd atomic.Int64
	// quiet is set by a Committer visit that found nothing held, the
	// tracker trimmed and nothing to commit, which also takes the manager
	// out of the Committer's rounds; whatever could give a visit work
	// again (offsets taken for delivery, a reset) clears it under mu and
	// puts it back (stir).
	quiet atomic.Bool
	// halt is closed once the manager is dying or ownership is lost: one
	// channel for the hot path to watch instead of two. closeHalt closes
	// it, called by kill and by the Fence (AfterLost); unwatchLost takes
	// the latter back.
	halt        chan struct{}
	haltOnce    sync.Once
	unwatchLost func() bool
	// suspended caches Fence.Suspended() as read while the session was
	// healthy: that channel stays open until the suspension begins. Used
	// by the run only; nil when not cached.
	suspended <-chan struct{}
	// leaseEnd fires at the end of the lease a blocking send in offer
	// was made under (Timer.Reset per send, one timer per manager). Used
	// by the run only; nil until the first blocking send.
	leaseEnd *time.Timer

	// commitMu is held by a commit from taking the offset until the store
	// answered (the Committer's batch, the final commit), so that two
	// commits of the partition never race and so never move it backwards.
	commitMu sync.Mutex

	// seeks counts the seeks applied: a batch handed out under an earlier
	// count is dropped by Pass (its messages were forgotten).
	seeks atomic.Uint64

	lastFetched   atomic.Int64
	highWatermark atomic.Int64
	delivered     atomic.Uint64
	staleAcks     atomic.Uint64
	resets        atomic.Uint64
	fetchErrors   atomic.Uint64
	commitErrors  atomic.Uint64
	waitingReady  atomic.Bool

	// Control requests (Seek, Pause, Resume; see control.go), applied by
	// the run between fetch sessions. ctlWake is closed while a
	// request waits (wakeClosed); the hot path's waits watch it.
	ctlMu        sync.Mutex
	ctlWake      atomic.Pointer[chan struct{}]
	wakeClosed   bool
	paused       bool
	seekReq      *seekRequest
	pauseWaiters []chan struct{}
	pausedNow    atomic.Bool

	// stopOnce runs Stop once; a concurrent Stop waits for it in Do.
	stopOnce sync.Once
	stopErr  error
}

// New validates p and registers the manager with p.Committer. It starts
// nothing and does no I/O: the caller runs the manager with Run, on a
// goroutine of its own choosing, and must call Stop (also when it never
// called Run).
func New(p Params) (_ *Manager, err error) {
	defer func() {
		if err != nil && p.Prefetched != nil {
			p.Prefetched.close()
		}
	}()
	switch {
	case p.Topic == "":
		return nil, fmt.Errorf("%w: Topic: empty", ErrConfig)
	case p.Partition < 0:
		return nil, fmt.Errorf("%w: Partition: %d is negative", ErrConfig, p.Partition)
	case p.Client == nil:
		return nil, fmt.Errorf("%w: Client: nil", ErrConfig)
	case p.Fetcher == nil:
		return nil, fmt.Errorf("%w: Fetcher: nil", ErrConfig)
	case p.Store == nil:
		return nil, fmt.Errorf("%w: Store: nil", ErrConfig)
	case p.Committer == nil:
		return nil, fmt.Errorf("%w: Committer: nil", ErrConfig)
	case p.Fence == nil:
		return nil, fmt.Errorf("%w: Fence: nil", ErrConfig)
	case p.Batches == nil:
		return nil, fmt.Errorf("%w: Batches: nil", ErrConfig)
	}
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{
		topic: p.Topic, partition: p.Partition, gen: generations.Add(1), p: p, cfg: p.Config,
		log:       log.With("topic", p.Topic, "partition", p.Partition),
		committed: -1,
		space:     make(chan struct{}, 1),
		halt:      make(chan struct{}),
		dying:     make(chan struct{}),
	}
	wake := make(chan struct{})
	m.ctlWake.Store(&wake)
	m.lastFetched.Store(-1)
	m.highWatermark.Store(-1)
	m.ackNext.Store(-1)
	if !p.Committer.add(m) {
		return nil, ErrCommitterClosed
	}
	// The fence closes halt when ownership is lost, and kill does when the
	// manager dies: no goroutine watches either.
	m.unwatchLost = p.Fence.AfterLost(m.closeHalt)
	return m, nil
}

// Run runs the manager on the calling goroutine: it reads the committed
// offset, then fetches and hands messages out until the manager halts
// (Halt, Stop, or ownership lost: Fence.AfterLost) or can fetch no more
// (the Fetcher was closed); then Done is closed. It returns ErrLost when
// ownership was lost, ErrStopped when Stop (or another Run) came first,
// nil otherwise. Stop waits for a Run under way; everything after the
// loop (drain, final commit) is Stop's. Run is Step on one goroutine that
// waits while the partition is parked.
func (m *Manager) Run() error {
	woken := make(chan struct{}, 1)
	resume := func() { woken <- struct{}{} } // once per park: never blocks
	for {
		parked, err := m.Step(resume)
		if !parked {
			return err
		}
		<-woken
	}
}

// Step runs the manager on the calling goroutine as Run does, except
// while the partition has nothing to hand out: then it parks the run and
// returns parked, holding no goroutine (see park.go). Once something may
// be there (records, an error, a halt, a control request), resume is
// called, once, on the goroutine that brought it (a fetch loop, a
// caller of Halt or Stop, the Fence's): it must not block, and must get
// Step called again, on any goroutine, which goes on with the run. When
// the run ends, Step returns parked false and the run's outcome, as Run
// would, and Done is closed. The caller must keep calling Step after a
// resume until it returns parked false, or call Stop, which ends a
// parked run itself.
func (m *Manager) Step(resume func()) (parked bool, err error) {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	switch {
	case !m.ran: // the first step
		m.ran = true
	case m.parkedRun: // go on
	case m.runTaken: // Stop ended the parked run: its outcome, once
		m.runTaken = false
		m.giveTurn() // given to it as it waited
		return false, m.runErr
	default:
		m.giveTurn()
		return false, ErrStopped
	}
	m.resume = resume
	m.parkedRun = m.run()
	if m.parkedRun {
		return true, nil
	}
	m.giveTurn()
	// However run ends (a lost claim, a halt, a closed fetcher), the
	// manager is done: Done is closed.
	err = m.exitReason()
	m.kill()
	return false, err
}

// Halt stops fetching and handing out at once, as Stop begins by doing,
// without waiting: Run returns soon (once a read of the committed offset
// or an offset query under way has answered), and Done is closed. Stop
// must still be called. Idempotent; safe for concurrent use; never
// blocks.
func (m *Manager) Halt() { m.kill() }

// kill starts the manager's death (Done) and closes halt.
func (m *Manager) kill() {
	m.dyingOnce.Do(func() {
		close(m.dying)
		if cut := m.readCut.Load(); cut != nil {
			(*cut)()
		}
	})
	m.closeHalt()
	m.unwatchLost()
}

// closeHalt closes halt; idempotent, safe for concurrent use.
func (m *Manager) closeHalt() {
	m.haltOnce.Do(func() { close(m.halt) })
	m.unpark()
}

// Topic returns the partition's topic.
func (m *Manager) Topic() string { return m.topic }

// Partition returns the partition id.
func (m *Manager) Partition() int32 { return m.partition }

// Generation identifies this ownership of the partition.
func (m *Manager) Generation() uint64 { return m.gen }

// FencingToken is the claim's fencing token (Fence.Token).
func (m *Manager) FencingToken() int64 { return m.p.Fence.Token() }

// Done is closed when Run returned (ownership lost, the Fetcher closed)
// or Halt or Stop was called.
func (m *Manager) Done() <-chan struct{} { return m.dying }

func (m *Manager) report(op string, err error) {
	e := &Error{Topic: m.topic, Partition: m.partition, Op: op, Err: err}
	if m.p.Report != nil {
		m.p.Report(e)
	}
}

// Ack acks the handed-out message at offset (only Message.Ack calls it: an
// offset taken for delivery but not yet handed out must not be acked).
// Safe for concurrent use; never blocks on I/O. After Stop has committed,
// acks are stale no-ops.
func (m *Manager) Ack(offset int64) AckResult {
	if m.fastAck(offset) {
		return AckOK
	}
	m.mu.Lock()
	if m.stopped || m.tracker == nil {
		m.mu.Unlock()
		m.countStale()
		return AckStale
	}
	if n := m.ackNext.Load(); n >= 0 && offset >= n {
		m.fastOff() // out of order: the tracker takes the acks from now on
	} else {
		m.fold()
	}
	r := m.tracker.Ack(offset)
	if r == tracker.AckOK {
		m.acks++
		if m.abandoned != nil && m.abandoned[offset] {
			delete(m.abandoned, offset)
		}
	} else {
		m.dupAcks++
	}
	m.mu.Unlock()
	switch r {
	case tracker.AckOK:
		select {
		case m.space <- struct{}{}:
		default:
		}
		return AckOK
	case tracker.AckDuplicate:
		return AckDuplicate
	default:
		return AckUnknown
	}
}

// countStale counts a stale ack, here and in Params.StaleAcks.
func (m *Manager) countStale() {
	m.staleAcks.Add(1)
	if m.p.StaleAcks != nil {
		m.p.StaleAcks.Add(1)
	}
}

// newBackoff returns the jittered backoff of the manager's retries.
func (m *Manager) newBackoff() *retry.Backoff {
	return retry.New(m.cfg.RetryBackoff, m.cfg.RetryBackoffMax)
}

// startPosition reads the committed offset, retrying until it succeeds.
// A Halt or Stop ends the read at once (readCut): Stop must not wait
// for it, and at Close the offset store holds its reads for the final
// commits' round, which waits for this manager to stop (see
// offsets/kafka_hold.go).
func (m *Manager) startPosition() (int64, bool) {
	b := m.newBackoff()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.CommitTimeout)
		m.readCut.Store(&cancel)
		select {
		case <-m.dying: // before readCut was set: kill did not see it
			cancel()
		default:
		}
		next, ok, err := m.p.Store.Fetch(ctx, m.topic, m.partition)
		m.readCut.Store(nil)
		cancel()
		if err == nil {
			if ok {
				m.mu.Lock()
				m.committed, m.verified = next, true
				m.mu.Unlock()
				return next, true
			}
			return InitialOffset(m.cfg), true
		}
		select {
		case <-m.dying: // stopping: the read was cut short, nothing failed
			return 0, false
		default:
		}
		if !errors.Is(err, offsets.ErrFetchOffset) {
			err = fmt.Errorf("%w: %w", offsets.ErrFetchOffset, err)
		}
		m.report(public.OpStart, fmt.Errorf("reading the committed offset: %w", err))
		m.log.Warn("reading the committed offset failed; retrying", "error", err)
		if !b.Wait(m.dying, m.p.Fence.Lost()) {
			return 0, false
		}
	}
}

// resolve turns OffsetOldest/OffsetNewest into a concrete offset.
func (m *Manager) resolve(pos int64) (int64, error) {
	if pos >= 0 {
		return pos, nil
	}
	return m.p.Client.GetOffset(m.topic, m.partition, pos)
}

// run is Step's loop: it reads the committed offset, then fetches (a
// fetch session: openSession, session, endSession) from there until the
// manager halts, applying control requests and the Initial policy between
// fetch sessions, and retrying a failed start with backoff. It returns
// true when it parked in a fetch session (m.fp is that session); the next
// step goes on with it.
func (m *Manager) run() (parked bool) {
	var pre *Prefetched
	var pos int64
	if m.fp == nil { // the first step
		pre = m.p.Prefetched
		defer func() {
			if pre != nil {
				pre.close()
			}
		}()
		select {
		case <-m.halt: // halted before it ran: no read of the committed offset
			return false
		default:
		}
		if at, committed, ok := pre.start(); ok {
			// Read after the claim, while the embedder was told.
			pos = at
			if committed >= 0 {
				m.mu.Lock()
				m.committed, m.verified = committed, true
				m.mu.Unlock()
			}
		} else {
			var ok bool
			if pos, ok = m.startPosition(); !ok {
				return false
			}
		}
		m.backoff = m.newBackoff()
	}
	for {
		if m.fp != nil {
			outOfRange, stop, parked := m.session()
			if parked {
				return true
			}
			m.giveTurn() // what follows waits for other things
			next := m.endSession()
			if stop {
				return false
			}
			pos = next
			switch {
			case outOfRange && m.fetchBelow:
				// The fetch opened before the claim, below the position,
				// went out of range there (retention): fetch from the
				// position itself; the policy applies if that is out of
				// range too.
				m.log.Debug("the fetch opened before the claim went out of range below the position; fetching from the position", "offset", next)
			case outOfRange:
				m.resetPosition(&pos, next)
			}
		}
		if !m.applyControl(&pos) {
			return false
		}
		fp, abs, err := m.openFetch(pre, pos)
		pre = nil // used or closed
		if err != nil {
			m.openFailed(pos, err)
			if !m.backoff.Wait(m.dying, m.p.Fence.Lost()) {
				return false
			}
			continue
		}
		m.backoff.Reset()
		m.ensureTracker(abs)
		m.openSession(fp)
	}
}

// openFailed counts, reports and logs a failed start of fetching.
func (m *Manager) openFailed(pos int64, err error) {
	m.fetchErrors.Add(1)
	m.report(public.OpFetch, fmt.Errorf("%w: %w", ErrFetch, err))
	m.log.Warn("starting to fetch failed; retrying", "offset", pos, "error", err)
}

func (m *Manager) exitReason() error {
	select {
	case <-m.p.Fence.Lost():
		return ErrLost
	default:
		return nil
	}
}

// resetPosition applies the Initial policy after an out-of-range offset.
func (m *Manager) resetPosition(pos *int64, was int64) {
	m.resets.Add(1)
	*pos = InitialOffset(m.cfg)
	m.log.Warn("offset out of range; resetting", "offset", was, "to", m.cfg.Initial)
	m.report(public.OpReset, fmt.Errorf("%w: offset %d, to %s", ErrReset, was, m.cfg.Initial))
}

// ensureTracker creates the tracker at start, or resets it when fetching
// restarts below what was delivered (a reset moved backwards).
func (m *Manager) ensureTracker(start int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stir()
	if m.tracker == nil {
		m.tracker = tracker.NewTracker(start)
		return
	}
	m.fastOff()
	if last, ok := m.tracker.LastDelivered(); ok && start <= last {
		m.log.Warn("fetch position moved backwards; unacked messages of the old range are forgotten", "from", last+1, "to", start)
		m.tracker.Reset(start)
	} else if !ok && start != m.tracker.Committable() {
		m.tracker.Reset(start)
	}
}

// offer sends b (a tracked batch) on Batches once the fence allows it. A
// send under way is withdrawn when the lease it was made under ends or
// the session is seen suspended, and made again once it is healthy: none
// is skipped, and none is handed out after its lease's end, but for a
// send that races with that end (a timer's latency; the session, and so
// the ownership, is still ours then, and Pass checks the lease again
// before the receiver yields a message). It returns false, having sent
// nothing, when the manager is stopping or a control request (seek,
// pause) is waiting.
//
// Its common path is lean: single-channel non-blocking checks (no channel
// lock when they pass), and a blocking send that watches four other
// channels.
func (m *Manager) offer(b *Handout) bool {
	out := m.p.Batches
	for {
		select {
		case <-m.halt:
			return false
		default:
		}
		// Suspended is closed exactly while Ready is not. The channel read
		// while healthy is closed when the suspension begins: keep it.
		suspended := m.suspended
		if suspended == nil {
			suspended = m.p.Fence.Suspended()
			m.suspended = suspended
		}
		wake := *m.ctlWake.Load()
		select {
		case <-suspended:
			m.suspended = nil
			m.giveTurn() // a wait for the session, not the receiver
			m.waitingReady.Store(true)
			select {
			case <-m.p.Fence.Ready():
				m.waitingReady.Store(false)
			case <-m.halt:
				m.waitingReady.Store(false)
				return false
			case <-wake:
				m.waitingReady.Store(false)
				return false
			}
			continue
		default:
		}
		// The channel says healthy; the clock must agree (a pause ends
		// the lease before any goroutine notices). Lease then shuts the
		// fence: the next round finds Suspended closed and waits above.
		until, ok := m.p.Fence.Lease()
		if !ok {
			m.suspended = nil
			continue
		}
		select {
		case out <- b: // the receiver is waiting
			return true
		default:
		}
		// The gate shuts a goroutine or two after the lease's end (the
		// session's monitor, then the consumer's health watch); the timer
		// ends the wait at the end itself.
		end := m.leaseTimer(until)
		select {
		case out <- b:
			end.Stop()
			return true
		case <-suspended:
			end.Stop()
			continue // hold it until the session is healthy again
		case <-end.C:
			continue // Lease, above, now shuts the gate
		case <-m.halt:
			end.Stop()
			return false
		case <-wake:
			end.Stop()
			return false
		}
	}
}

// leaseTimer returns the manager's lease timer, set to fire at until.
func (m *Manager) leaseTimer(until time.Time) *time.Timer {
	d := time.Until(until)
	if m.leaseEnd == nil {
		m.leaseEnd = time.NewTimer(d)
	} else {
		m.leaseEnd.Reset(d)
	}
	return m.leaseEnd
}

// beginCommit is the Committer's visit: it releases the tracker's memory
// if the partition was idle (nothing outstanding, nothing handed out)
// since the previous visit, then takes commitMu without waiting and
// returns the acked watermark if it moved past what is committed and the
// fence allows committing, with the end of the fence's lease: the commit
// must not take effect after it. When ok, the caller must call endCommit
// with the outcome; otherwise commitMu is not held. A quiet partition
// (see Manager.quiet) costs it one atomic load. Safe for concurrent use;
// never blocks.
func (m *Manager) beginCommit() (next int64, until time.Time, ok, refused bool) {
	if m.quiet.Load() {
		return 0, time.Time{}, false, false
	}
	if !m.commitMu.TryLock() {
		return 0, time.Time{}, false, false // a final commit (or a seek) is under way
	}
	m.mu.Lock()
	if m.tracker == nil {
		m.mu.Unlock()
		m.commitMu.Unlock()
		return 0, time.Time{}, false, false
	}
	m.fold()
	trimmed := false
	if delivered := m.delivered.Load(); m.tracker.Outstanding() == 0 {
		if m.idleSeen == delivered {
			m.tracker.Trim()
			trimmed = true
		}
		m.idleSeen = delivered
	} else {
		m.idleSeen = ^uint64(0)
	}
	next, prev := m.tracker.Committable(), m.committed
	if trimmed && next <= prev {
		// Nothing held, so no ack can come before offsets are taken for
		// delivery again (stir), and nothing to commit.
		m.quiet.Store(true)
		m.p.Committer.deactivate(m)
	}
	m.mu.Unlock()
	if next <= prev {
		m.commitMu.Unlock()
		return 0, time.Time{}, false, false
	}
	until, leased := m.p.Fence.Lease()
	if !leased {
		m.commitMu.Unlock()
		return next, time.Time{}, false, true
	}
	return next, until, true, false
}

// stir clears quiet: the Committer's next round visits m again. m.mu
// held.
// Loaded first so that a busy partition does not write the shared flag.
func (m *Manager) stir() {
	if m.quiet.Load() {
		m.quiet.Store(false)
		m.p.Committer.activate(m)
	}
}

// endCommit records the outcome of the commit of next that beginCommit
// began, and releases commitMu. A failure is counted and reported; the
// Committer logs one line for the batch (a line per partition at
// thousands of partitions was itself a load when a coordinator stalls).
func (m *Manager) endCommit(next int64, err error) {
	defer m.commitMu.Unlock()
	if err != nil {
		m.commitErrors.Add(1)
		m.report(public.OpCommit, commitError(next, err))
		m.log.Debug("commit failed", "offset", next, "error", err)
		return
	}
	m.mu.Lock()
	if next > m.committed {
		m.committed, m.verified = next, false
	}
	m.mu.Unlock()
	m.log.Debug("committed", "offset", next)
}

// finalCommit commits the watermark synchronously with Store.Commit (which
// reads it back) if it moved, or if what is committed was not read back
// yet, and the fence allows it. It waits for a commit of the Committer's
// under way.
func (m *Manager) finalCommit() error {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	m.mu.Lock()
	if m.tracker == nil {
		m.mu.Unlock()
		return nil
	}
	m.fold()
	next, prev, verified := m.tracker.Committable(), m.committed, m.verified
	m.mu.Unlock()
	if next < prev || next == prev && verified {
		return nil
	}
	until, ok := m.p.Fence.Lease()
	if !ok {
		err := fmt.Errorf("%w: not committing offset %d: %w", ErrCommit, next, fenceError(m.p.Fence))
		m.report(public.OpCommit, err)
		return err
	}
	// The lease bounds the commit: the store sends nothing after until,
	// and tears down a connection whose request is still unanswered then.
	ctx, cancel := leaseContext(offsets.WithToken(context.Background(), m.p.Fence.Token()), m.cfg.CommitTimeout, until)
	defer cancel()
	if err := m.p.Store.Commit(ctx, m.topic, m.partition, next); err != nil {
		m.commitErrors.Add(1)
		err = commitError(next, err)
		m.report(public.OpCommit, err)
		return err
	}
	m.mu.Lock()
	if next >= m.committed {
		m.committed, m.verified = next, true
	}
	m.mu.Unlock()
	m.log.Debug("committed finally", "offset", next)
	return nil
}

// pendingForDrain counts unacked messages the user actually received.
func (m *Manager) pendingForDrain() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tracker == nil {
		return 0
	}
	m.fold()
	return m.tracker.Pending() - len(m.abandoned)
}

// Abandon records that the message at offset was handed out and will not
// be acked (its processing failed for good and the user is stopping): a
// drain no longer waits for it. Commits still stop below it, so it is
// delivered again to the next owner. A later Ack still counts. Safe for
// concurrent use; never blocks on I/O.
func (m *Manager) Abandon(offset int64) {
	m.mu.Lock()
	if !m.stopped && m.tracker != nil {
		m.fastOff()
		if m.abandoned == nil {
			m.abandoned = map[int64]bool{}
		}
		if last, ok := m.tracker.LastDelivered(); ok && offset <= last && offset >= m.tracker.Committable() {
			m.abandoned[offset] = true
		}
	}
	m.mu.Unlock()
	select {
	case m.space <- struct{}{}: // wake a drain waiting for acks
	default:
	}
}

// Stop ends the ownership. It leaves the Committer and stops fetching at
// once, dropping messages not yet handed out. With drain, it then waits up
// to DrainTimeout for the outstanding acks, commits the acked watermark
// synchronously (Store.Commit, which reads it back; after a commit of the
// Committer's under way) and releases the store's resources; without
// drain (the claim is lost) nothing is committed. CutDrain ends the drain
// early (the final commit is still made). Later acks are stale no-ops.
// Stop is idempotent and blocks until all of it is done; it returns the
// drain or commit error, if any, each of them already reported once
// through Params.Report (the caller need not report it again). The
// caller releases the claim afterwards.
func (m *Manager) Stop(drain bool) error {
	m.stopOnce.Do(func() {
		m.p.Committer.remove(m)
		m.kill()
		// Waits for a Run under way; one that comes later returns at
		// once, and the prefetched Fetch it would have used is closed
		// here.
		m.runMu.Lock()
		switch {
		case !m.ran:
			m.ran = true
			if m.p.Prefetched != nil {
				m.p.Prefetched.close()
			}
		case m.parkedRun: // its resume may come later: the run ends here
			m.endSession()
			m.parkedRun = false
			m.runTaken, m.runErr = true, m.exitReason()
		}
		m.runMu.Unlock()
		if m.p.Halted != nil {
			m.p.Halted()
		}
		var errs []error
		if drain {
			if m.p.BeforeDrain != nil {
				m.p.BeforeDrain()
			}
			if err := m.drain(); err != nil {
				if m.p.Report != nil {
					m.p.Report(err)
				}
				errs = append(errs, err)
			}
			if err := m.finalCommit(); err != nil {
				errs = append(errs, &Error{Topic: m.topic, Partition: m.partition, Op: public.OpCommit, Err: err})
			}
		}
		m.mu.Lock()
		if m.tracker != nil {
			m.fastOff()
		}
		m.stopped = true
		m.mu.Unlock()
		if m.p.CloseBatches {
			close(m.p.Batches)
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.CommitTimeout)
		if err := m.p.Store.Release(ctx, m.topic, m.partition); err != nil {
			m.log.Warn("releasing the offset store failed", "error", err)
		}
		cancel()
		m.stopErr = errors.Join(errs...)
		m.log.Debug("partition manager stopped", "drain", drain, "committed", m.Stats().Committed)
	})
	return m.stopErr
}

// drain waits until every handed-out message is acked, the deadline
// passes, or ownership is lost.
func (m *Manager) drain() error {
	deadline := time.NewTimer(m.cfg.DrainTimeout)
	defer deadline.Stop()
	for {
		n := m.pendingForDrain()
		if n <= 0 {
			return nil
		}
		if m.cut.Load() {
			return &Error{Topic: m.topic, Partition: m.partition, Op: public.OpDrain,
				Err: fmt.Errorf("%w: %d unacked, drain cut short", ErrDrainLate, n)}
		}
		select {
		case <-m.space:
		case <-m.p.Fence.Lost():
			return &Error{Topic: m.topic, Partition: m.partition, Op: public.OpDrain, Err: ErrLost}
		case <-deadline.C:
			return &Error{Topic: m.topic, Partition: m.partition, Op: public.OpDrain,
				Err: fmt.Errorf("%w: %d unacked after %v", ErrDrainLate, n, m.cfg.DrainTimeout)}
		}
	}
}

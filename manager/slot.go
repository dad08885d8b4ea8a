package manager

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgroup/zkgroup/internal/partition"
	"github.com/zkgroup/zkgroup/internal/retry"
	"github.com/zkgroup/zkgroup/internal/shrink"
)

// slotTable is the consumer's part that owns the claims and slots: one
// slot per partition this member wants or still holds, each run by a
// goroutine of its own while it has work (runSlot, stepSlot), and what
// carries over between them.
// Under Consumer.mu, except the channels and the atomic counters.
type slotTable struct {
	slots     map[TopicPartition]*slot
	slotsPeak shrink.Peak
	events    chan slotEvent // from the slot goroutines to the loop
	// claimWaiting is signalled (buffered 1) by a slot whose claim found
	// the partition held by another member, so that the loop checks at
	// once whether the plan saw that holder (claimWaitTooLong) instead of
	// at its next second.
	claimWaiting chan struct{}
	// holderQueue: the slots whose claims found a holder since the loop
	// last looked (onClaimWaiting), under holderMu.
	holderMu           sync.Mutex
	holderQueue        []*slot
	lastClaimWaitCheck time.Time
	// unseenLogged: when claims waiting on holders their plan did not see
	// were last logged at Info; unseenCount: those rechecked since.
	unseenLogged   time.Time
	unseenCount    int
	restartBackoff map[TopicPartition]*retry.Backoff // lost partitions claimed again
	// creates and deletes batch the creates of the owner nodes the slots
	// claim and the deletes of those they release.
	creates, deletes opBatcher
	// readBacks batches the claims' reads of their owner nodes, and
	// releaseReads (plain) the releases' reads before the deletes.
	readBacks    readBatcher
	releaseReads readBatcher
	// prefetched holds the consumers opened before the first assignment
	// (see prefetch) until a slot takes them or dropPrefetched closes them.
	prefetched map[TopicPartition]*partition.Prefetched
	// Counts of partition managers that have stopped, so that the
	// consumer's totals never go down when a partition moves.
	past       partitionTotals
	claimWaits atomic.Int64
	restarts   atomic.Uint64
	// waitingClaims: the slots whose waitingSince is set. While it is 0,
	// the loop's checks of waiting claims skip their pass over every slot
	// (and the check sleeps: checkNeeded).
	waitingClaims atomic.Int64
}

func newSlotTable() slotTable {
	return slotTable{
		slots:          map[TopicPartition]*slot{},
		events:         make(chan slotEvent, 1024),
		claimWaiting:   make(chan struct{}, 1),
		restartBackoff: map[TopicPartition]*retry.Backoff{},
		releaseReads:   readBatcher{plain: true},
	}
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
	// claimPre: the prefetch started with the claim (nil: none), whose
	// result becomes pre; the slot goroutine's.
	claimPre *claimPrefetch
	pm       atomic.Pointer[partition.Manager]
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
	// Set by runSlot once the partition manager exists, for its steps
	// (stepSlot): the claim, the partition's logger and the resume that
	// starts the next step on a goroutine of its own.
	cl     *claim
	log    *slog.Logger
	resume func()
}

type slotEvent struct {
	sl      *slot
	started bool // the partition manager started
	done    bool // the slot goroutine ended
}

func (c *Consumer) onSlotEvent(ev slotEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := ev.sl
	if c.slots[sl.tp] != sl {
		return
	}
	switch {
	case ev.done:
		if pm := sl.pm.Load(); pm != nil {
			ps := pm.Stats()
			c.past.add(ps)
		}
		delete(c.slots, sl.tp)
		sl.cb.live = false
		sl.recountLocked()
		c.slots = shrink.Map(c.slots, &c.slotsPeak)
		var delay time.Duration
		if sl.state != stopping {
			// Lost or died: claim it again if it is still ours, after a
			// jittered wait that grows while it keeps failing. Not a
			// rebalance: nothing that decides the assignment changed.
			c.restarts.Add(1)
			bo := c.restartBackoff[sl.tp]
			if bo == nil {
				bo = retry.New(100*time.Millisecond, 5*time.Second)
				c.restartBackoff[sl.tp] = bo
			}
			delay = bo.Next()
		}
		// Revoked, then assigned to this member again while it stopped; or
		// lost while still ours: claim it again.
		if slices.Contains(c.assigned, sl.tp) && c.t.Alive() {
			c.startSlotLocked(sl.tp, delay)
		}
	case ev.started:
		if sl.state == claiming {
			sl.state = running
			sl.recountLocked()
		}
	}
	c.checkAppliedLocked()
}

// startSlotLocked starts a slot goroutine that claims tp after delay, and
// returns the slot. c.mu must be held.
func (c *Consumer) startSlotLocked(tp TopicPartition, delay time.Duration) *slot {
	sl := &slot{tp: tp, state: claiming, revoke: make(chan struct{}), delay: delay, pre: c.takePrefetchedLocked(tp)}
	c.addSlotLocked(sl)
	c.slotsWG.Add(1)
	go c.runSlot(sl)
	return sl
}

// addSlotLocked puts sl in the slots. c.mu must be held.
func (c *Consumer) addSlotLocked(sl *slot) {
	sl.cb.cbs, sl.cb.live = &c.cb, true
	sl.recountLocked()
	c.slots[sl.tp] = sl
	c.slotsPeak.Note(len(c.slots))
}

func (c *Consumer) send(ev slotEvent) {
	select {
	case c.events <- ev:
	case <-c.loopDone: // nobody reads them any more
	}
}

// runSlot claims a partition, runs its manager until revoked or lost, then
// drains (when revoked), commits and releases the claim. The partition
// has one goroutine at a time, and none while it is idle: runSlot claims
// it and takes the first step of its manager's run
// (partition.Manager.Step); when the run parks (nothing to hand out), the
// goroutine ends, and the manager's resume starts the next step on a new
// one (stepSlot). The step that ends the run, halted by a revoke
// (stopSlotLocked) or by the claim's loss (the manager's fence), finishes
// the slot. The slot counts in slotsWG from its start to its end, parked
// or not; a parked partition is resumed by every halt, so Close never
// waits on one.
func (c *Consumer) runSlot(sl *slot) {
	cl, pm, log := c.openSlot(sl)
	if pm == nil {
		c.endSlot(sl)
		return
	}
	sl.cl, sl.log = cl, log
	sl.resume = func() { go c.stepSlot(sl) }
	c.stepSlot(sl)
}

// stepSlot takes a step of sl's partition manager's run and, when the
// run ended (it did not park), finishes the slot.
func (c *Consumer) stepSlot(sl *slot) {
	pm := sl.pm.Load()
	if parked, _ := pm.Step(sl.resume); parked {
		return
	}
	// The partition's run ended: revoked, lost, or the fetcher closed (as
	// when it ends on its own, nothing is drained).
	c.finishSlot(sl, sl.cl, pm, sl.log)
	c.endSlot(sl)
}

// openSlot claims sl's partition and starts its manager (not its loop),
// and returns the partition's logger; a nil manager when there is none
// to run.
func (c *Consumer) openSlot(sl *slot) (*claim, *partition.Manager, *slog.Logger) {
	log := c.log.With("topic", sl.tp.Topic, "partition", sl.tp.Partition)
	c.mu.Lock()
	// Unowned, or held by a member that left and is draining (it lets
	// go once its final commit is made, which the manager reads again).
	_, departed := c.departed[sl.seen]
	unowned := sl.seenSet && (sl.seen == "" || departed) && sl.delay == 0
	c.mu.Unlock()
	if unowned && sl.pre == nil && c.cfg.OffsetStorage == StorageKafka {
		sl.claimPre = c.startClaimPrefetch(sl.tp)
	}
	cl := c.claimSlot(sl, log)
	if cl == nil {
		return nil, nil, log
	}
	pm, stream, ok := c.newPartition(sl, cl, log)
	if !ok {
		return nil, nil, log
	}
	c.startSlot(sl, cl, pm, stream, log)
	return cl, pm, log
}

// endSlot is the slot goroutine's last step: the prefetched consumer not handed to
// a manager is closed, the partition's final-commit slot is given up
// (stopped at Close without a final commit, if none was queued), and the
// loop is told the slot ended.
func (c *Consumer) endSlot(sl *slot) {
	defer c.slotsWG.Done()
	defer c.send(slotEvent{sl: sl, done: true})
	defer c.final.done(sl.tp)
	if sl.claimPre != nil { // not taken: cut short
		sl.claimPre.cancel()
		sl.pre = sl.claimPre.take(nil)
		sl.claimPre = nil
	}
	if sl.pre != nil { // not handed to a partition manager
		sl.pre.FP.Close() // stop fetching it
		sl.pre = nil
	}
}

// startSlot makes a revoke that came before the manager existed halt it,
// hands the stream out (ModePartitions) and tells the loop the slot
// started.
func (c *Consumer) startSlot(sl *slot, cl *claim, pm *partition.Manager, stream *PartitionStream, log *slog.Logger) {
	// From here on a revoke halts the manager (stopSlotLocked); one that
	// came before does here.
	c.mu.Lock()
	sl.pm.Store(pm)
	revoked := sl.state == stopping
	c.mu.Unlock()
	if revoked {
		pm.Halt()
	}
	if c.cutDrains.Load() {
		pm.CutDrain()
	}
	if stream != nil {
		select {
		case c.partitions <- stream:
		case <-sl.revoke:
		case <-cl.Lost():
		}
	}
	c.send(slotEvent{sl: sl, started: true})
	log.Debug("partition started", "generation", pm.Generation())
}

// finishSlot stops sl's halted manager (draining and committing when
// revoked), tells the embedder and lets the claim go.
func (c *Consumer) finishSlot(sl *slot, cl *claim, pm *partition.Manager, log *slog.Logger) {
	drain := false
	if !cl.lost() {
		select {
		case <-sl.revoke:
			drain = !sl.lose.Load() // left for Kafka unreachability: nothing to drain into a commit
		default:
		}
	}
	if err := pm.Stop(drain); err != nil {
		// Already reported on Errors() by the partition manager.
		log.Warn("partition stopped with an error", "error", err)
	}
	// Messages not received yet of a lost partition, or of one whose
	// drain gave up, are taken back before OnRevoked or OnLost.
	c.fwd.withdraw(pm)
	// Stopped (drained and committed unless lost), still claimed: tell
	// the embedder (OnRevoked, or OnLost: a lost partition was neither
	// drained nor committed, and another member may own it already), with
	// the rest of its group, then let go.
	c.stopped(sl, cl, !drain)
	c.letGo(cl, log, drain)
}

// claimSlot waits sl's delay, claims its partition and waits for the
// embedder to be told (OnAssigned). It returns the claim, or nil when the
// slot ended first (revoked, lost; a claim made meanwhile let go).
func (c *Consumer) claimSlot(sl *slot, log *slog.Logger) *claim {
	if sl.delay > 0 {
		t := time.NewTimer(sl.delay)
		select {
		case <-t.C:
		case <-sl.revoke:
			t.Stop()
			return nil
		}
	}
	c.mu.Lock()
	unowned := sl.seenSet && sl.seen == "" // as the plan that assigned it saw it
	c.mu.Unlock()
	start := claimRead
	if unowned {
		start = claimCreate
	}
	cl, err := acquire(c.session, c.group, sl.tp, c.id, c.health, log, sl.revoke, &c.claimWaits, c.claimWaiter(sl), &c.creates, &c.readBacks, start)
	if err != nil {
		return nil
	}
	select {
	case <-sl.revoke: // revoked while the claim was being made
		c.letGo(cl, log, false)
		return nil
	default:
	}
	// Claimed, not yet fetching: the embedder is told first (OnAssigned),
	// with the rest of this rebalance's partitions; meanwhile the
	// committed offset is read.
	c.readAfterClaim(sl, log)
	if !c.awaitAssigned(sl, cl) {
		c.letGo(cl, log, false)
		return nil
	}
	select {
	case <-sl.revoke: // revoked or lost while OnAssigned ran: nothing was handed out
		c.stopped(sl, cl, sl.lose.Load())
		c.letGo(cl, log, false)
		return nil
	case <-cl.Lost():
		c.stopped(sl, cl, true)
		c.letGo(cl, log, false)
		return nil
	default:
	}
	return cl
}

// claimWaiter is what sl's claim calls when the partition's holder (the
// member its claim waits for) changes; "" once it no longer waits. A new
// holder wakes the loop (claimWaiting), which reads the owners again at
// once if the plan did not see that holder (claimWaitTooLong).
func (st *slotTable) claimWaiter(sl *slot) func(holder string) {
	return func(holder string) {
		if holder == "" {
			if sl.waitingSince.Swap(0) != 0 {
				st.waitingClaims.Add(-1)
			}
			sl.holder.Store(nil)
			return
		}
		sl.holder.Store(&holder)
		if sl.waitingSince.Swap(time.Now().UnixNano()) == 0 {
			st.waitingClaims.Add(1)
		}
		st.holderMu.Lock()
		st.holderQueue = append(st.holderQueue, sl)
		st.holderMu.Unlock()
		select {
		case st.claimWaiting <- struct{}{}:
		default: // the loop has one to read already
		}
	}
}

// takeHolderQueue returns the slots whose claims found a holder since it
// was last called (claimWaiter), and empties the queue.
func (st *slotTable) takeHolderQueue() []*slot {
	st.holderMu.Lock()
	defer st.holderMu.Unlock()
	q := st.holderQueue
	st.holderQueue = nil
	return q
}

// newPartition makes sl's partition manager (not started), and in
// ModePartitions its stream; on failure it reports, lets the claim go and
// returns false.
func (c *Consumer) newPartition(sl *slot, cl *claim, log *slog.Logger) (*partition.Manager, *PartitionStream, bool) {
	if sl.claimPre != nil {
		sl.pre = sl.claimPre.take(sl.revoke)
		sl.claimPre = nil
	}
	params := partition.Params{
		Topic: sl.tp.Topic, Partition: sl.tp.Partition,
		Client: c.lister, Fetcher: partition.FetcherOf(c.fetcher), Store: partitionStore{c.store, &c.final}, Committer: c.commits, Fence: cl,
		// c.log: the partition manager adds the topic and partition itself.
		Config: c.cfg.Partition, Logger: c.log, Report: c.report, StaleAcks: &c.staleAcks,
		Prefetched: sl.pre,
	}
	sl.pre = nil // the manager owns it now, also if New fails
	var src *partStream
	if c.cfg.Mode == ModePartitions {
		src = &partStream{bch: make(chan *partition.Handout)}
		params.Batches, params.CloseBatches = src.bch, true
	} else {
		params.Batches, params.Turns = c.batches, c.turns
	}
	var pmOf atomic.Pointer[partition.Manager]
	params.BeforeDrain = func() {
		pm := pmOf.Load()
		if src != nil {
			src.rest.abandonOf(pm)
		} else {
			c.eachRest.abandonOf(pm)
		}
	}
	params.Halted = func() { c.fwd.halted(pmOf.Load()) }
	pm, err := partition.New(params)
	if err != nil {
		c.report(err)
		c.stopped(sl, cl, false) // nothing was handed out; the claim is still held
		c.letGo(cl, log, false)
		return nil, nil, false
	}
	pmOf.Store(pm)
	var stream *PartitionStream
	if src != nil {
		src.pm = pm
		stream = partition.NewStream(sl.tp.Topic, sl.tp.Partition, pm.Generation(), src)
	}
	return pm, stream, true
}

// letGo releases a stopped (or never started) slot's claim, or leaves it
// to the session's close when the consumer is closing: Close deletes
// every claim in the one transaction that ends the session, not one
// delete each.
func (c *Consumer) letGo(cl *claim, log *slog.Logger, drained bool) {
	if c.leaving.Load() {
		// Close: the session's close deletes the node (shutdown).
		cl.abandon()
		log.Debug("partition let go; its claim goes with the session", "drained", drained)
		return
	}
	if err := cl.releaseVia(&c.deletes, &c.releaseReads); err != nil {
		log.Warn("releasing the claim failed", "error", err)
	}
	log.Debug("partition released", "drained", drained)
}

package manager

import (
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/retry"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// RebalanceCause says what made a member compute its assignment again.
type RebalanceCause string

// The causes counted in Stats.RebalancesByCause.
const (
	// CauseStart: the member's first assignment after Join.
	CauseStart RebalanceCause = "start"
	// CauseMembership: a member joined or left (the ids children
	// changed), or a member's registration changed.
	CauseMembership RebalanceCause = "membership"
	// CausePartitions: topics matching a subscription appeared or went, or
	// a topic's partition count or replica assignment changed. A leader
	// change is not one: the fetcher follows the new leader by itself.
	CausePartitions RebalanceCause = "partitions"
	// CauseSession: the ZooKeeper session was replaced (expiry); every
	// claim was lost and the member registered again.
	CauseSession RebalanceCause = "session"
	// CauseClaimWait: a partition this member should own stayed held by
	// another member for Config.ClaimWaitCheck, or is held by a member the
	// assignment did not see holding it: the owners are read again in case
	// that member decided otherwise.
	CauseClaimWait RebalanceCause = "claim-wait"
	// CauseAssignment: the group's stored assignment changed: a member
	// computed the group's assignment from a change this member may not
	// have seen yet.
	CauseAssignment RebalanceCause = "assignment"
	// CauseUnowned: a partition stayed without owner over two checks
	// Config.UnownedCheck apart.
	CauseUnowned RebalanceCause = "unowned"
	// CauseKafka: the member joined the group again once Kafka answered,
	// after it had left because Kafka did not (see
	// Config.KafkaUnreachableTimeout).
	CauseKafka RebalanceCause = "kafka"
)

// loop is the consumer manager: it owns the slots map and rebalances when,
// and only when, something that decides the assignment changed: the
// members, the subscription's topics and partition counts, the session.
// A slot starting or stopping is not such a change: a lost partition that
// is still this member's is claimed again by restartSlot without a
// rebalance. Two cheap checks catch members that decided differently
// (they read the assignment node or the owners at different moments of
// overlapping changes): a claim that waits too long, and a partition left
// without owner.
func (c *Consumer) loop(regData []byte) error {
	defer close(c.loopDone)
	defer func() {
		if c.planLeft != nil {
			<-c.planLeft // it reads through the registrations' cache
		}
		c.regs.close()
	}()
	l := &loopState{c: c, regData: regData,
		pending:  map[RebalanceCause]bool{CauseStart: true},
		failures: retry.New(100*time.Millisecond, 5*time.Second),
	}
	l.grace = time.NewTimer(time.Hour)
	l.grace.Stop()
	defer l.grace.Stop()
	c.mu.Lock()
	c.markDirtyLocked()
	c.mu.Unlock()
	// The first assignment waits JoinSettle, and for the members to be
	// quiet for RebalanceDelay (see startDelay), so that members started
	// together do not each claim everything first.
	now := time.Now()
	l.settleUntil = now.Add(c.cfg.JoinSettle)
	l.quietUntil = l.settleUntil.Add(startQuietRounds * c.cfg.RebalanceDelay)
	l.watchStart()
	l.debounce = time.NewTimer(l.startDelay(now))
	defer l.debounce.Stop()
	c.prefetch() // during the settle
	defer c.dropPrefetched()
	check := time.NewTimer(checkEvery)
	defer check.Stop()
	checking := true // check is armed
	unowned := time.NewTimer(jittered(c.cfg.UnownedCheck))
	defer unowned.Stop()
	for {
		c.loopBusy.Store(0) // waiting: responsive (Stats.LoopAt)
		kind, run := l.wait(check.C, unowned.C)
		c.loopBusy.Store(time.Now().UnixNano())
		c.loopTurns.Add(1)
		switch kind {
		case workDying:
			return c.shutdown()
		case workCheck:
			checking = false
			l.onCheck()
		case workUnowned:
			l.checkUnowned()
			unowned.Reset(jittered(c.cfg.UnownedCheck))
		default:
			run()
		}
		if !checking && c.checkNeeded() {
			check.Reset(checkEvery)
			checking = true
		}
	}
}

// checkEvery is the period of the loop's check (onCheck) while it has
// something to look at (checkNeeded).
const checkEvery = time.Second

// The kinds of work wait returns.
const (
	workRun     = iota // run the function wait returned
	workDying          // the consumer is closing
	workCheck          // the check timer fired
	workUnowned        // the unowned-check timer fired
)

// wait blocks until the loop has work and returns its kind and, for
// workRun, the function that does it.
func (l *loopState) wait(check, unowned <-chan time.Time) (int, func()) {
	c := l.c
	// Closing first: a select picks at random among what is ready, and a
	// rebalance at 10,000 partitions can take a second.
	select {
	case <-c.t.Dying():
		return workDying, nil
	default:
	}
	select {
	case <-c.t.Dying():
		return workDying, nil
	case <-l.idsWatch:
		return workRun, func() {
			l.idsWatch = nil
			if !l.started {
				l.watchStart()
			}
			l.trigger(CauseMembership)
		}
	case <-l.staticWatch:
		return workRun, func() { l.staticWatch = nil; l.trigger(CauseMembership) }
	case <-l.assignWatch:
		return workRun, l.onAssignment
	case <-c.regs.changed:
		return workRun, func() { l.trigger(CauseMembership) }
	case <-l.grace.C:
		return workRun, func() { l.armGrace(c.expireAway(time.Now())) }
	case <-c.meta.Changes():
		return workRun, l.onMetadata
	case <-c.kafka.changed:
		return workRun, l.followKafka
	case <-c.sessionChanged:
		return workRun, l.onSessionChanged
	case ev := <-c.events:
		return workRun, func() { l.onSlotEvent(ev) }
	case <-c.claimWaiting:
		return workRun, l.onClaimWaiting
	case <-check:
		return workCheck, nil
	case <-unowned:
		return workUnowned, nil
	case <-l.retryAt:
		return workRun, l.onRetry
	case <-l.debounce.C:
		return workRun, l.onDebounce
	}
}

// loopState is the loop's own state, touched by the loop's goroutine only.
type loopState struct {
	c       *Consumer
	regData []byte
	// idsWatch, staticWatch and assignWatch: the watches the last
	// rebalance set on the members, on the restart markers and on the
	// group's assignment node (nil: none armed).
	idsWatch, staticWatch, assignWatch <-chan zk.Event
	// grace ends the restart grace of the first member away (static.go).
	grace *time.Timer
	// pending: the causes noticed since the last rebalance; debounce
	// fires the next one RebalanceDelay after the last of them.
	pending  map[RebalanceCause]bool
	debounce *time.Timer
	failures *retry.Backoff
	retryAt  <-chan time.Time // armed after a failed rebalance or registration
	// started: the first rebalance is done. Until then settleUntil
	// (JoinSettle from the start) and quietUntil (startQuietRounds
	// RebalanceDelays later) bound its wait (startDelay).
	started                 bool
	settleUntil, quietUntil time.Time
	// writerUntil: when a plan stops waiting for the writer's stored
	// assignment (zero: not waiting; see plan.awaitWriter); notOn: the
	// node's last write a wait ended on (writerWait.notOn).
	writerUntil time.Time
	notOn       int64
	// unownedBefore: the partitions without owner at the last check.
	unownedBefore map[TopicPartition]bool
}

// trigger notes why a rebalance is due and (re)starts its debounce.
func (l *loopState) trigger(why RebalanceCause) {
	if len(l.pending) == 0 {
		l.c.mu.Lock()
		l.c.markDirtyLocked()
		l.c.mu.Unlock()
	}
	l.pending[why] = true
	if l.started {
		l.debounce.Reset(l.c.cfg.RebalanceDelay)
	} else {
		l.debounce.Reset(l.startDelay(time.Now()))
	}
}

// startQuietRounds bounds, in RebalanceDelays, how long the first
// assignment waits after JoinSettle for the members to stop changing (1 s
// by default): a member joining a group where others keep joining takes
// its partitions after that at the latest.
const startQuietRounds = 20

// startDelay is how long from now the first rebalance waits: until
// JoinSettle has passed and RebalanceDelay after the last change of the
// members (watchStart), at most until quietUntil. Members started
// together register within milliseconds of each other, but each would
// read the members as soon as it registered: the first ones would see
// some of the others only, claim more than their share and hand it back
// a rebalance later.
func (l *loopState) startDelay(now time.Time) time.Duration {
	d := max(l.c.cfg.RebalanceDelay, l.settleUntil.Sub(now))
	return max(min(d, l.quietUntil.Sub(now)), 0)
}

// watchStart arms the watch on the members before the first rebalance,
// which then waits for them to be quiet (startDelay). Without it (the
// read failed) the first rebalance waits as if they were.
func (l *loopState) watchStart() {
	if _, _, ch, err := l.c.session.ChildrenW(zkdata.IDsPath(l.c.group)); err == nil {
		l.idsWatch = ch
	}
}

// armGrace sets the grace timer to at (zero: none).
func (l *loopState) armGrace(at time.Time) {
	l.grace.Stop()
	if !at.IsZero() {
		l.grace.Reset(time.Until(at))
	}
}

// onAssignment follows the group's assignment node's change: at once
// while a plan awaits the writer (which debounced the changes it stored
// already), otherwise after RebalanceDelay.
func (l *loopState) onAssignment() {
	l.assignWatch = nil
	l.trigger(CauseAssignment)
	if !l.writerUntil.IsZero() {
		l.debounce.Reset(0)
	}
}

func (l *loopState) onMetadata() {
	if l.c.metadataMatters() {
		l.trigger(CausePartitions)
	}
}

func (l *loopState) onSlotEvent(ev slotEvent) {
	l.c.onSlotEvent(ev)
	if l.c.kafka.getPhase() == phaseLeaving {
		l.followKafka()
	}
}

func (l *loopState) onClaimWaiting() {
	if l.c.unseenHolders() {
		l.trigger(CauseClaimWait)
	}
}

// onCheck is the loop's check, once a second while checkNeeded: Kafka's
// reachability (which its watch signals too), the partitions squatted,
// the claims waiting.
func (l *loopState) onCheck() {
	c := l.c
	l.followKafka()
	c.mu.Lock()
	c.noteSquatsLocked(time.Now())
	c.mu.Unlock()
	if c.claimWaitTooLong() {
		l.trigger(CauseClaimWait)
	}
}

// checkNeeded reports whether onCheck has something to look at: a claim
// waiting on a holder, squatted partitions or non-member holders still
// noted (a check clears them once no claim waits), or the member not in
// the group for Kafka. Otherwise the check sleeps, so that an idle member's
// loop does not wake every second; whatever makes it needed also wakes the
// loop (a claim waiting signals claimWaiting, Kafka's watch changed).
func (c *Consumer) checkNeeded() bool {
	if c.waitingClaims.Load() > 0 || c.kafka.getPhase() != phaseIn {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.squatted > 0 || len(c.nonMembers) > 0
}

// onSessionChanged registers the member again under a new session.
func (l *loopState) onSessionChanged() {
	c := l.c
	st := c.session.Status()
	// Out of the group for Kafka unreachability, the member
	// registers again only once Kafka answers (followKafka).
	if st.HasSession && st.Epoch != c.regEpoch && c.kafka.getPhase() == phaseIn {
		c.log.Warn("new zookeeper session: partitions stopped, registering again", "epoch", st.Epoch)
		if err := l.reregister(st); err != nil {
			c.report(fmt.Errorf("%w: registering again: %w", ErrJoin, err))
			c.log.Error("registering again failed; retrying", "error", err)
			l.retryAt = time.After(l.failures.Next())
		}
		l.idsWatch, l.staticWatch, l.assignWatch = nil, nil, nil
		l.trigger(CauseSession)
	}
}

// onRetry retries a failed registration, then the rebalance due.
func (l *loopState) onRetry() {
	c := l.c
	l.retryAt = nil
	if st := c.session.Status(); st.HasSession && st.Epoch != c.regEpoch && c.kafka.getPhase() == phaseIn {
		if err := l.reregister(st); err != nil {
			l.retryAt = time.After(l.failures.Next())
			return
		}
		l.idsWatch, l.staticWatch, l.assignWatch = nil, nil, nil
	}
	if len(l.pending) > 0 {
		l.debounce.Reset(0)
	}
}

// onDebounce rebalances for the pending causes, unless a retry is armed
// or Kafka's reachability says to wait.
func (l *loopState) onDebounce() {
	c := l.c
	if len(l.pending) == 0 || l.retryAt != nil || c.kafka.getPhase() != phaseIn {
		return // out for Kafka: the changes wait for the rejoin's rebalance
	}
	if c.kafka.suspect() {
		// Kafka did not answer the last probe: no partition is
		// taken (nor given up) until it answers or the member
		// leaves.
		l.debounce.Reset(c.kafka.interval / 2)
		return
	}
	if len(l.pending) == 1 && l.pending[CauseAssignment] {
		// Mostly the writer storing what every member computed after
		// a change they all saw: one node read, not a rebalance.
		if same, w := c.storedUnchanged(); same {
			l.assignWatch = w
			clear(l.pending)
			c.mu.Lock()
			c.pendingSince = time.Time{}
			c.mu.Unlock()
			return
		}
	}
	now := time.Now()
	waiting := l.writerUntil.IsZero() || now.Before(l.writerUntil)
	res, err := c.rebalance(l.pending, writerWait{first: !l.started && waiting, input: waiting, notOn: l.notOn})
	if err != nil {
		c.log.Warn("rebalance failed; retrying", "error", err)
		l.retryAt = time.After(l.failures.Next())
		return
	}
	l.failures.Reset()
	l.idsWatch, l.staticWatch, l.assignWatch = res.ids, res.static, res.assignment
	if res.dropped {
		return // closing: shutdown is next
	}
	if res.awaiting {
		// The writer stores the assignment this member will follow
		// (the watch on its node fires then), or the wait ends at
		// writerUntil and the member computes: at most SessionTimeout
		// for a first plan from the owners, ClaimWaitCheck otherwise
		// (the writer stores within its RebalanceDelay; one that does
		// not is busy or stuck). A writer gone ends it sooner: the
		// members' watch fires.
		switch until := now.Add(c.cfg.ClaimWaitCheck); {
		case res.firstWait && l.writerUntil.IsZero():
			l.writerUntil = now.Add(c.cfg.SessionTimeout)
			c.log.Info("waiting for the group's assignment from its writer", "wait", c.cfg.SessionTimeout)
		case !res.firstWait && (l.writerUntil.IsZero() || until.Before(l.writerUntil)):
			l.writerUntil = until
			c.log.Debug("waiting for the writer to store the assignment of this view", "wait", c.cfg.ClaimWaitCheck)
		}
		l.debounce.Reset(l.writerUntil.Sub(now))
		return
	}
	if !waiting {
		l.notOn = res.storedMzxid // not awaited again
		c.log.Info("the writer stored no assignment for this view in time; computed one")
	}
	l.writerUntil = time.Time{}
	l.started = true
	l.armGrace(res.graceEnd)
	clear(l.pending)
	c.dropPrefetched() // the first assignment took what it starts
}

// jittered returns d ± 20 %, so that members' periodic checks spread out.
func jittered(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()-0.5)*0.4*float64(d))
}

// claimWaitTooLong reports whether the owners should be read again for a
// claim that waits on another owner: at once when the holder is not who
// the plan that assigned the partition saw holding it (unseenHolders),
// and otherwise once it has waited ClaimWaitCheck, at most once per
// ClaimWaitCheck. The loop's check calls it once a second, over every
// slot; a claim that finds a holder wakes the loop at once
// (onClaimWaiting), which looks at the slots that found one since.
//
// A holder the plan did not see took the partition after this member read
// the owners: the two computed from different views of overlapping
// changes, and one of them must give way. The holder the plan saw is the
// previous owner, which may be draining, committing and releasing (then
// reading again changes nothing), or may have computed from another view
// that keeps the partition (then reading again moves this member's plan
// to what the holder did). The waiting partition's node is read again
// (ownersCache.recheck).
func (c *Consumer) claimWaitTooLong() bool {
	c.takeHolderQueue() // all of them are looked at here
	now := time.Now()
	if c.waitingClaims.Load() == 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	due := now.Sub(c.lastClaimWaitCheck) >= c.cfg.ClaimWaitCheck
	if c.unseenHoldersLocked(maps.Values(c.slots), now) {
		return true
	}
	if !due {
		return false
	}
	for _, sl := range c.slots {
		since, h := sl.waitingSince.Load(), sl.holder.Load()
		if h == nil || since == 0 {
			continue // not waiting
		}
		if _, ok := c.departed[*h]; ok {
			continue // a member that left, draining: no plan of it to read
		}
		if now.Sub(time.Unix(0, since)) >= c.cfg.ClaimWaitCheck {
			c.lastClaimWaitCheck = now
			c.log.Info("a claim waits for another owner; reading the owners again",
				"topic", sl.tp.Topic, "partition", sl.tp.Partition)
			c.ownerCache.recheck(sl.tp)
			return true
		}
	}
	return false
}

// unseenHolders reports whether a slot whose claim found a holder since
// the loop last looked (claimWaiter) waits on one its plan did not see:
// see claimWaitTooLong. It looks at those slots only, not at every one:
// a rebalance of thousands of partitions wakes the loop about as often.
func (c *Consumer) unseenHolders() bool {
	q := c.takeHolderQueue()
	if len(q) == 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unseenHoldersLocked(slices.Values(q), time.Now())
}

// unseenHoldersLocked rechecks every slot of slots (each still the
// consumer's) whose claim waits on a holder its plan did not see, once
// per holder, and logs them at Info at most once a second with the count
// since: a rebalance of thousands of partitions can have as many, each
// waking the loop as it finds its holder. c.mu must be held.
func (c *Consumer) unseenHoldersLocked(slots iter.Seq[*slot], now time.Time) bool {
	unseen := 0
	var first *slot
	for sl := range slots {
		h := sl.holder.Load()
		if h == nil || sl.waitingSince.Load() == 0 || !sl.seenSet || *h == sl.seen || c.slots[sl.tp] != sl {
			continue
		}
		if first == nil {
			first = sl
		}
		c.log.Debug("a claim waits for an owner the assignment did not see",
			"topic", sl.tp.Topic, "partition", sl.tp.Partition, "holder", *h, "seen", sl.seen)
		sl.seen = *h // once per holder, until a plan sees it
		c.ownerCache.recheck(sl.tp)
		unseen++
	}
	if unseen == 0 {
		return false
	}
	c.unseenCount += unseen
	if now.Sub(c.unseenLogged) >= time.Second {
		c.log.Info("claims wait for owners the assignment did not see; reading the owners again",
			"claims", c.unseenCount, "topic", first.tp.Topic, "partition", first.tp.Partition, "holder", first.seen)
		c.unseenLogged, c.unseenCount = now, 0
	}
	return true
}

// checkUnowned reads the owners through the owners cache (the owners
// nodes' stats, and what changed) and triggers a rebalance when a
// partition was without owner in this check and the one before; it keeps
// this check's unowned partitions for the next. It does nothing while a
// rebalance is due: that one reads the owners anyway, and partitions
// between owners are expected then.
func (l *loopState) checkUnowned() {
	c, before := l.c, l.unownedBefore
	l.unownedBefore = nil
	st := c.session.Status()
	if len(l.pending) > 0 || !st.HasSession {
		return
	}
	counts := metadata.Counts(c.meta.Snapshot().Topics)
	topics := slices.Sorted(maps.Keys(counts))
	c.mu.Lock()
	kept := c.kept // replaced, never changed in place
	c.mu.Unlock()
	read := c.ownerCache.unowned
	if !c.lastFromOwners { // none before the first rebalance, which a pending one skips
		read = c.ownerCache.unownedListed // no owner needed: no owner node read
	}
	unowned, err := read(c.session, c.group, topics, st.Epoch, counts)
	if err != nil {
		c.log.Debug("checking owners failed", "error", err)
		return
	}
	now := map[TopicPartition]bool{}
	still := 0
	for _, tp := range unowned {
		if kept[tp] { // a partition kept for a member away is meant to be unowned
			continue
		}
		now[tp] = true
		if before[tp] {
			still++
		}
	}
	if still > 0 {
		c.log.Info("partitions without owner; reading the owners again", "partitions", still)
		l.trigger(CauseUnowned)
	}
	l.unownedBefore = now
}

// reregister creates this member's ids node again under the session of
// st and records its epoch.
func (l *loopState) reregister(st zkconn.Status) error {
	c := l.c
	if err := register(c.session, c.group, c.id, l.regData); err != nil {
		return err
	}
	if err := writeMarker(c.session, c.group, c.id, l.regData, c.cfg.RestartGrace); err != nil {
		return err
	}
	c.mu.Lock()
	c.regEpoch = st.Epoch
	c.mu.Unlock()
	return nil
}

// watchHealth opens and shuts the partitions' gate as the session's health
// changes, in a goroutine of its own: the loop does ZooKeeper I/O (a
// rebalance, the owner checks), which blocks while the connection stalls,
// and a suspension must stop every hand-out at once all the same. It
// passes each change on to the loop.
//
// It runs until the loop has returned (shutdown included: drains and final
// commits follow the session's health too).
func (c *Consumer) watchHealth() error {
	for {
		select {
		case <-c.loopDone:
			return nil
		case <-c.session.Changes():
			c.health.set(c.session.Status().Healthy)
			select {
			case c.sessionChanged <- struct{}{}:
			default:
			}
		}
	}
}

package manager

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/retry"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// RebalanceCause says what made a member compute its assignment again.
type RebalanceCause string

// The causes counted in Stats.RebalancesByCause.
const (
	// CauseStart: the member's first assignment after Join.
	CauseStart RebalanceCause = "start"
	// CauseMembership: a member joined or left (the ids children changed).
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
// (they read the owners at different moments of overlapping changes): a
// claim that waits too long, and a partition left without owner.
func (c *Consumer) loop(regData []byte) error {
	defer close(c.loopDone)
	var idsWatch, staticWatch <-chan zk.Event
	// grace ends the restart grace of the first member away (static.go).
	grace := time.NewTimer(time.Hour)
	grace.Stop()
	defer grace.Stop()
	armGrace := func(at time.Time) {
		grace.Stop()
		if !at.IsZero() {
			grace.Reset(time.Until(at))
		}
	}
	pending := map[RebalanceCause]bool{CauseStart: true}
	c.markDirty()
	// The first assignment waits JoinSettle, so that members started
	// together do not each claim everything first.
	debounce := time.NewTimer(c.cfg.JoinSettle)
	defer debounce.Stop()
	c.prefetch() // during the settle
	defer c.dropPrefetched()
	trigger := func(why RebalanceCause) {
		if len(pending) == 0 {
			c.markDirty()
		}
		pending[why] = true
		debounce.Reset(c.cfg.RebalanceDelay)
	}
	failures := retry.New(100*time.Millisecond, 5*time.Second)
	var retryAt <-chan time.Time // armed after a failed rebalance or registration
	check := time.NewTicker(time.Second)
	defer check.Stop()
	unowned := time.NewTimer(jittered(c.cfg.UnownedCheck))
	defer unowned.Stop()
	var unownedBefore map[TopicPartition]bool
	for {
		c.loopAt.Store(time.Now().UnixNano())
		select {
		case <-c.t.Dying():
			return c.shutdown()
		case <-idsWatch:
			idsWatch = nil
			trigger(CauseMembership)
		case <-staticWatch:
			staticWatch = nil
			trigger(CauseMembership)
		case <-grace.C:
			armGrace(c.expireAway(time.Now()))
		case <-c.meta.Changes():
			if c.metadataMatters() {
				trigger(CausePartitions)
			}
		case <-c.kafka.changed:
			c.followKafka(regData, trigger)
		case <-c.sessionChanged:
			st := c.session.Status()
			// Out of the group for Kafka unreachability, the member
			// registers again only once Kafka answers (followKafka).
			if st.HasSession && st.Epoch != c.regEpoch && c.kafka.getPhase() == phaseIn {
				c.log.Warn("new zookeeper session: partitions stopped, registering again", "epoch", st.Epoch)
				if err := c.reregister(st, regData); err != nil {
					c.report(fmt.Errorf("%w: registering again: %w", ErrJoin, err))
					c.log.Error("registering again failed; retrying", "error", err)
					retryAt = time.After(failures.Next())
				}
				idsWatch, staticWatch = nil, nil
				trigger(CauseSession)
			}
		case ev := <-c.events:
			c.onSlotEvent(ev)
			if c.kafka.getPhase() == phaseLeaving {
				c.followKafka(regData, trigger)
			}
		case <-c.claimWaiting:
			if c.claimWaitTooLong() {
				trigger(CauseClaimWait)
			}
		case <-check.C:
			c.followKafka(regData, trigger)
			c.mu.Lock()
			c.noteSquatsLocked(time.Now())
			c.mu.Unlock()
			if c.claimWaitTooLong() {
				trigger(CauseClaimWait)
			}
		case <-unowned.C:
			unownedBefore = c.checkUnowned(unownedBefore, trigger)
			unowned.Reset(jittered(c.cfg.UnownedCheck))
		case <-retryAt:
			retryAt = nil
			if st := c.session.Status(); st.HasSession && st.Epoch != c.regEpoch && c.kafka.getPhase() == phaseIn {
				if err := c.reregister(st, regData); err != nil {
					retryAt = time.After(failures.Next())
					continue
				}
				idsWatch, staticWatch = nil, nil
			}
			if len(pending) > 0 {
				debounce.Reset(0)
			}
		case <-debounce.C:
			if len(pending) == 0 || retryAt != nil || c.kafka.getPhase() != phaseIn {
				continue // out for Kafka: the changes wait for the rejoin's rebalance
			}
			if c.kafka.suspect() {
				// Kafka did not answer the last probe: no partition is
				// taken (nor given up) until it answers or the member
				// leaves.
				debounce.Reset(c.kafka.interval / 2)
				continue
			}
			w, sw, graceEnd, err := c.rebalance(pending)
			if err != nil {
				c.log.Warn("rebalance failed; retrying", "error", err)
				retryAt = time.After(failures.Next())
				continue
			}
			failures.Reset()
			idsWatch, staticWatch = w, sw
			armGrace(graceEnd)
			clear(pending)
			c.dropPrefetched() // the first assignment took what it starts
		}
	}
}

// jittered returns d ± 20 %, so that members' periodic checks spread out.
func jittered(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()-0.5)*0.4*float64(d))
}

// claimWaitTooLong reports whether the owners should be read again for a
// claim that waits on another owner: at once (it is called once a second,
// and as soon as a claim finds a holder) when the holder is not who the
// plan that assigned the partition saw holding it, and otherwise once it
// has waited ClaimWaitCheck, at most once per ClaimWaitCheck.
//
// A holder the plan did not see took the partition after this member read
// the owners: the two computed from different views of overlapping
// changes, and one of them must give way (with ClaimWaitCheck alone that
// took 15 s in BenchmarkScale's overlapping joins). The holder the plan
// saw is the previous owner, which may legitimately take a while to
// drain, commit and release: for it, reading again changes nothing.
func (c *Consumer) claimWaitTooLong() bool {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	due := now.Sub(c.lastClaimWaitCheck) >= c.cfg.ClaimWaitCheck
	for _, sl := range c.slots {
		h, since := sl.holder.Load(), sl.waitingSince.Load()
		if h == nil || since == 0 {
			continue // not waiting
		}
		switch {
		case sl.seenSet && *h != sl.seen:
			c.log.Info("a claim waits for an owner the assignment did not see; reading the owners again",
				"topic", sl.tp.Topic, "partition", sl.tp.Partition, "holder", *h, "seen", sl.seen)
			sl.seen = *h // once per holder, until a plan sees it
			return true
		case due && now.Sub(time.Unix(0, since)) >= c.cfg.ClaimWaitCheck:
			c.lastClaimWaitCheck = now
			c.log.Info("a claim waits for another owner; reading the owners again",
				"topic", sl.tp.Topic, "partition", sl.tp.Partition)
			return true
		}
	}
	return false
}

// checkUnowned lists the owner nodes (one read per topic) and triggers a
// rebalance when a partition was without owner in this check and the one
// before; it returns this check's unowned partitions.
func (c *Consumer) checkUnowned(before map[TopicPartition]bool, trigger func(RebalanceCause)) map[TopicPartition]bool {
	if !c.session.Status().HasSession {
		return nil
	}
	snap := c.meta.Snapshot()
	c.mu.Lock()
	topics := append([]string(nil), c.assignedTopics...)
	kept := c.kept // replaced, never changed in place
	c.mu.Unlock()
	owned, err := ownedPartitions(c.session, c.group, topics)
	if err != nil {
		c.log.Debug("checking owners failed", "error", err)
		return nil
	}
	now := map[TopicPartition]bool{}
	still := 0
	for _, t := range topics {
		for _, p := range snap.Topics[t] {
			tp := TopicPartition{Topic: t, Partition: p.ID}
			if !owned[tp] && !kept[tp] { // a partition kept for a member away is meant to be unowned
				now[tp] = true
				if before[tp] {
					still++
				}
			}
		}
	}
	if still > 0 {
		c.log.Info("partitions without owner; reading the owners again", "partitions", still)
		trigger(CauseUnowned)
	}
	return now
}

// reregister creates this member's ids node again under the session of
// st and records its epoch.
func (c *Consumer) reregister(st zkconn.Status, regData []byte) error {
	if err := register(c.session, c.group, c.id, regData); err != nil {
		return err
	}
	if err := writeMarker(c.session, c.group, c.id, regData, c.cfg.RestartGrace); err != nil {
		return err
	}
	c.mu.Lock()
	c.regEpoch = st.Epoch
	c.mu.Unlock()
	return nil
}

// markDirty records when the first change not yet applied was noticed.
func (c *Consumer) markDirty() {
	c.mu.Lock()
	if c.pendingSince.IsZero() {
		c.pendingSince = time.Now()
	}
	c.mu.Unlock()
}

// shutdown revokes every slot, waits for them (bounded by CloseTimeout,
// counted from Close: see closeDeadline) and leaves the group. The slots stop fetching, drain and commit, but keep
// their owner nodes: once every slot has stopped, closing the session
// deletes the owner nodes and the registration at once, in the one
// transaction that ends the session, where deleting each would take a
// transaction of its own (101 for a member of 100 partitions). The peers
// see the member and its claims go together. If CloseTimeout passes first,
// the registration is deleted at once, so that the peers start their
// rebalance, and the remaining owner nodes go when the session is closed,
// after the last slot stopped (finish): a claim is never given up before
// its partition stopped.
func (c *Consumer) shutdown() error {
	c.leaving.Store(true)
	if c.leaveForGood.Load() && c.cfg.RestartGrace > 0 {
		if err := writeMarker(c.session, c.group, c.id, nil, 0); err != nil {
			c.log.Warn("deleting the restart marker failed: the group keeps this member's partitions for RestartGrace", "error", err)
		}
	}
	// No routine commit starts any more: every partition's final commit
	// comes, and would wait for it (one round more) were it started.
	c.commits.Halt()
	c.mu.Lock()
	g := c.newGroupLocked(cbRevoked) // Close's OnRevoked
	var tps []TopicPartition
	for _, sl := range c.slots {
		if sl.state != stopping {
			tps = append(tps, sl.tp)
		}
	}
	// Their final commits share one round (finalcommits.go); held from
	// before the first can come.
	c.final.begin(tps)
	defer c.final.release()
	for _, sl := range c.slots {
		if sl.state != stopping {
			c.stopSlotLocked(sl, g)
		}
	}
	c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		// Slot goroutines report on c.events; swallow those here.
		for {
			select {
			case <-c.events:
			case <-done:
				return
			}
		}
	}()
	waited := make(chan struct{})
	go func() { c.slotsWG.Wait(); close(waited) }()
	// The hold ends at the latest after CommitInterval: a final commit
	// waits for the others' drains no longer than a routine commit would.
	bound := time.NewTimer(c.cfg.Partition.CommitInterval)
	defer bound.Stop()
	closeBy := time.NewTimer(time.Until(c.closeDeadline()))
	defer closeBy.Stop()
	var err error
wait:
	for {
		select {
		case <-waited:
			break wait
		case <-bound.C:
			c.final.release()
		case <-closeBy.C:
			err = fmt.Errorf("manager: close: partitions still stopping after %v", c.cfg.CloseTimeout)
			c.log.Error("close timed out", "error", err)
			c.final.release()
			c.cutDrainsNow() // here: the consumer's tomb waits for the slots (dispatchCallbacks)
			break wait
		}
	}
	close(done)
	if err == nil {
		c.session.Close() // deletes the registration and every owner node
		c.log.Info("left group")
		return nil
	}
	// Past CloseTimeout: wait for ZooKeeper no more (closing the session,
	// in finish, deletes the registration anyway); a connected session
	// deletes it at once.
	c.session.Interrupt()
	if derr := within(min(c.cfg.SessionTimeout, c.cfg.CloseTimeout/10), func() error { return deregister(c.session, c.group, c.id) }); derr != nil {
		c.log.Warn("deregistering failed", "error", derr)
	}
	c.log.Info("left group")
	return err
}

// cutDrainsNow cuts short the drains under way, and those of partitions
// starting after it (runSlot checks cutDrains).
func (c *Consumer) cutDrainsNow() {
	c.cutDrains.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sl := range c.slots {
		if pm := sl.pm.Load(); pm != nil {
			pm.CutDrain()
		}
	}
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

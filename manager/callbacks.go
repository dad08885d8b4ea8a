package manager

import (
	"context"
	"slices"
	"time"
)

// The rebalance callbacks (Config.OnAssigned, OnRevoked, OnLost) are
// called by one goroutine of the consumer's tomb, the dispatcher
// (dispatchCallbacks), one call at a time. The slots do not call them:
// they tell the dispatcher what they did (claimed, stopped) and wait for
// the call that concerns them before they go on (deliver, release). Every
// piece of state below is guarded by Consumer.mu.

// cbPhase is where a slot stands with the embedder.
type cbPhase int

const (
	cbNone       cbPhase = iota // not announced: not claimed yet, or withdrawn
	cbClaimed                   // claimed, waiting for its OnAssigned
	cbAnnouncing                // in the OnAssigned under way
	cbAnnounced                 // OnAssigned returned (or is not set): the embedder knows it
	cbReported                  // stopped and handed to a stop group: the slot is done with callbacks
)

// cbKind is what a stop group tells the embedder.
type cbKind int

const (
	cbRevoked cbKind = iota
	cbLost
)

// slotCB is a slot's part in the callbacks (under Consumer.mu).
type slotCB struct {
	phase     cbPhase
	claimedAt time.Time
	claim     *claim
	assigned  chan struct{} // closed once its OnAssigned returned
	// group: the stop group it will be reported in (set when its stop
	// was decided, for announced slots); released: closed once that
	// group's callback returned.
	group    *cbGroup
	released chan struct{}
	// cbs: the consumer's callbacks; live: the slot is in Consumer.slots;
	// counted: it is counted in cbs.claimsUnderWay (see recountLocked).
	cbs     *callbacks
	live    bool
	counted bool
}

// recountLocked keeps callbacks.claimsUnderWay: the slots in
// Consumer.slots claiming and not yet waiting to be told. Called after
// every change of a slot's state, phase or liveness. The last claim under
// way gone (claimed, started, stopped or ended), the dispatcher is kicked:
// the partitions claimed meanwhile are named now.
func (sl *slot) recountLocked() {
	want := sl.cb.live && sl.state == claiming && sl.cb.phase == cbNone
	if want == sl.cb.counted || sl.cb.cbs == nil {
		return
	}
	sl.cb.counted = want
	if want {
		sl.cb.cbs.claimsUnderWay++
		return
	}
	sl.cb.cbs.claimsUnderWay--
	if sl.cb.cbs.claimsUnderWay == 0 {
		sl.cb.cbs.signal()
	}
}

// cbGroup is the partitions told in one OnRevoked or OnLost call: those
// stopped by one rebalance, by Close, by one leave for Kafka, or lost with
// one ZooKeeper session; or a partition stopped on its own. pending counts
// the announced members still stopping: the call waits for all of them.
type cbGroup struct {
	kind    cbKind
	pending int
	done    []*slot
	session int64 // for a session's losses: its id
}

// callbacks is the consumer's part (under Consumer.mu; kick is not).
type callbacks struct {
	kick   chan struct{} // buffered 1: something changed for the dispatcher
	groups []*cbGroup    // in the order they were opened
	// claimsUnderWay: slots claiming, not yet claimed (slot.recountLocked);
	// claimed: the slots that were set cbClaimed, in that order (those no
	// longer cbClaimed are dropped as the dispatcher meets them). The
	// dispatcher looks at these, not at every slot: a member claiming
	// 10,000 partitions is kicked at each claim.
	claimsUnderWay int
	claimed        []*slot
}

func newCallbacks() callbacks { return callbacks{kick: make(chan struct{}, 1)} }

func (cb *callbacks) signal() {
	select {
	case cb.kick <- struct{}{}:
	default:
	}
}

// newGroupLocked opens a stop group.
func (cb *callbacks) newGroupLocked(kind cbKind) *cbGroup {
	g := &cbGroup{kind: kind}
	cb.groups = append(cb.groups, g)
	return g
}

// stopSlotLocked revokes sl (which must not be stopping yet): its claim is
// canceled or its partition stops (its manager halts at once: its loop
// runs on the slot goroutine, which then drains), and, if the embedder
// knows it, it is told in g's call.
func (sl *slot) stopLocked(g *cbGroup) {
	sl.state = stopping
	sl.recountLocked()
	close(sl.revoke)
	if pm := sl.pm.Load(); pm != nil {
		pm.Halt()
	}
	sl.joinGroupLocked(g)
}

// joinGroupLocked moves an announced slot, still to report, into g.
func (sl *slot) joinGroupLocked(g *cbGroup) {
	if sl.cb.phase != cbAnnouncing && sl.cb.phase != cbAnnounced || sl.cb.group == g {
		return
	}
	if old := sl.cb.group; old != nil {
		old.pending--
	}
	sl.cb.group = g
	g.pending++
}

// awaitAssigned is called by a slot that holds its claim and has not
// started its partition: it waits for the OnAssigned that names it. It
// returns false when the slot was revoked or lost its claim before it
// was named: the embedder never hears of it, and the slot releases it.
func (c *Consumer) awaitAssigned(sl *slot, cl *claim) bool {
	c.mu.Lock()
	sl.cb.claim = cl
	if c.cfg.OnAssigned == nil {
		sl.cb.phase = cbAnnounced
		sl.recountLocked()
		c.mu.Unlock()
		return true
	}
	assigned := make(chan struct{})
	sl.cb.phase, sl.cb.claimedAt, sl.cb.assigned = cbClaimed, time.Now(), assigned
	sl.recountLocked()
	c.cb.claimed = append(c.cb.claimed, sl)
	c.mu.Unlock()
	c.cb.signal()
	select {
	case <-assigned:
		return true
	case <-sl.revoke:
	case <-cl.Lost():
	}
	c.mu.Lock()
	if sl.cb.phase == cbClaimed {
		sl.cb.phase = cbNone
		sl.recountLocked()
		c.mu.Unlock()
		c.cb.signal() // one claim fewer to wait for
		return false
	}
	c.mu.Unlock()
	<-assigned // in the call under way: stop it once told, as any other
	return true
}

// stopped is called by a claimed slot once its partition stopped (lost:
// without a drain or commit), or once it gave up starting it, before it
// lets go of its claim. It tells the final commits' hold (finalcommits.go)
// that no final commit of sl's is to come any more: one that waits for
// the embedder here must not keep the others' final commits waiting, and
// they must not keep it waiting either, since its group's call waits for
// them. If the embedder knows the partition, it waits until it was told,
// in the call of the slot's group.
func (c *Consumer) stopped(sl *slot, cl *claim, lost bool) {
	c.final.done(sl.tp)
	c.mu.Lock()
	if sl.cb.phase != cbAnnounced {
		c.mu.Unlock()
		return
	}
	g := sl.cb.group
	kind := cbRevoked
	if lost || cl.lost() || cl.sessionEnded() || g != nil && g.kind == cbLost {
		// A member of a loss group is lost even if its own claim has not
		// heard of it yet (its session ended).
		kind = cbLost
	}
	if g == nil || g.kind != kind {
		if kind == cbLost && cl.sessionEnded() {
			g = c.sessionLossLocked(cl.sessionID)
		} else {
			g = c.cb.newGroupLocked(kind)
		}
		sl.joinGroupLocked(g)
	}
	g.pending--
	sl.cb.phase = cbReported
	released := make(chan struct{})
	sl.cb.released = released
	f := c.cfg.OnRevoked
	if kind == cbLost {
		f = c.cfg.OnLost
	}
	if f == nil {
		close(released)
	} else {
		g.done = append(g.done, sl)
	}
	c.mu.Unlock()
	c.cb.signal()
	<-released
}

// sessionLossLocked returns the group of the partitions lost with the
// ZooKeeper session id: every announced slot whose claim that session
// made and that is still to report is in it, since each will stop.
func (c *Consumer) sessionLossLocked(id int64) *cbGroup {
	for _, g := range c.cb.groups {
		if g.kind == cbLost && g.session == id {
			return g
		}
	}
	g := c.cb.newGroupLocked(cbLost)
	g.session = id
	for _, sl := range c.slots {
		if sl.cb.claim != nil && sl.cb.claim.sessionID == id {
			sl.joinGroupLocked(g)
		}
	}
	return g
}

// nextCallbackLocked returns the next call to make, or nil and how long
// until one may be due without a kick (0: none).
func (c *Consumer) nextCallbackLocked() (call func(context.Context), wait time.Duration) {
	if call := c.nextStopCallLocked(); call != nil {
		return call, 0
	}
	return c.nextAssignCallLocked()
}

// nextStopCallLocked returns the call of the first group of losses, then
// of revokes, whose partitions all stopped (nil: none).
func (c *Consumer) nextStopCallLocked() func(context.Context) {
	// Losses, then revokes: their claims wait on the call.
	for _, kind := range []cbKind{cbLost, cbRevoked} {
		for i, g := range c.cb.groups {
			if g.kind != kind || g.pending > 0 {
				continue
			}
			c.cb.groups = slices.Delete(c.cb.groups, i, i+1)
			if len(g.done) == 0 {
				return func(context.Context) {} // nobody left to tell
			}
			return c.stopCall(g)
		}
	}
	return nil
}

// nextAssignCallLocked returns the OnAssigned call of the partitions
// claimed and not told yet: once no claim is under way, or the oldest
// claim waiting to be told has waited ClaimWaitCheck (until then, how
// long is left).
func (c *Consumer) nextAssignCallLocked() (call func(context.Context), wait time.Duration) {
	ok := func(sl *slot) bool {
		return sl.state != stopping && sl.cb.phase == cbClaimed && !sl.cb.claim.lost() && !sl.cb.claim.sessionEnded()
	}
	q := c.cb.claimed
	for len(q) > 0 && q[0].cb.phase != cbClaimed {
		q[0] = nil
		q = q[1:]
	}
	c.cb.claimed = q
	if c.cb.claimsUnderWay > 0 {
		// The oldest claim waiting to be told says how long is left;
		// claimedAt grows along the queue.
		i := slices.IndexFunc(q, ok)
		if i < 0 {
			return nil, 0
		}
		if left := time.Until(q[i].cb.claimedAt.Add(c.cfg.ClaimWaitCheck)); left > 0 {
			return nil, left
		}
	}
	var ready []*slot
	rest := q[:0]
	for _, sl := range q {
		switch {
		case ok(sl):
			ready = append(ready, sl)
		case sl.cb.phase == cbClaimed:
			rest = append(rest, sl) // lost or stopping: its awaitAssigned takes it back
		}
	}
	clear(q[len(rest):])
	if cap(rest) > 4*len(rest)+64 {
		rest = slices.Clone(rest) // a burst's queue let go
	}
	c.cb.claimed = rest
	if len(ready) == 0 {
		return nil, 0
	}
	for _, sl := range ready {
		sl.cb.phase = cbAnnouncing
	}
	parts := partitionMap(ready)
	return func(ctx context.Context) {
		c.cfg.OnAssigned(ctx, c, parts)
		c.mu.Lock()
		for _, sl := range ready {
			sl.cb.phase = cbAnnounced
			close(sl.cb.assigned)
			sl.cb.assigned = nil // awaitAssigned holds it; the slot need not
		}
		c.mu.Unlock()
	}, 0
}

// stopCall tells the embedder about g's partitions, then lets them go.
func (c *Consumer) stopCall(g *cbGroup) func(context.Context) {
	f := c.cfg.OnRevoked
	if g.kind == cbLost {
		f = c.cfg.OnLost
	}
	parts := partitionMap(g.done)
	return func(ctx context.Context) {
		f(ctx, c, parts)
		for _, sl := range g.done {
			close(sl.cb.released)
		}
	}
}

// partitionMap returns the slots' partitions by topic, sorted.
func partitionMap(sls []*slot) map[string][]int32 {
	m := map[string][]int32{}
	for _, sl := range sls {
		m[sl.tp.Topic] = append(m[sl.tp.Topic], sl.tp.Partition)
	}
	for _, ps := range m {
		slices.Sort(ps)
	}
	return m
}

// dispatchCallbacks makes the rebalance callbacks' calls, one at a time,
// until the loop returned and every slot ended. Its context is canceled
// once the consumer is closing.
func (c *Consumer) dispatchCallbacks() error {
	ctx := c.t.Context(nil)
	allDone := make(chan struct{})
	go func() {
		<-c.loopDone // no slot starts after it
		c.slotsWG.Wait()
		close(allDone)
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		c.mu.Lock()
		call, wait := c.nextCallbackLocked()
		c.mu.Unlock()
		if call != nil {
			call(ctx)
			continue
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-c.cb.kick:
		case <-timer.C:
		case <-allDone:
			return nil
		}
		timer.Stop()
	}
}

package manager

import (
	"cmp"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"gopkg.in/tomb.v2"
)

// closing is the consumer's part that owns its shutdown. The sequence,
// one step after the other:
//
//  1. Close, Leave (which first sets leaveForGood) or Interrupt calls
//     beginClose: closeBegun notes when (CloseTimeout counts from it), a
//     suspended session is interrupted, and the tomb t is killed.
//  2. The loop sees the tomb dying (also while a rebalance computes its
//     plan, which is then dropped: planUnlessClosing) and runs shutdown:
//     leaving is set (a slot that stops keeps its owner node), Leave's
//     restart marker is deleted, routine commits halt, every slot is
//     revoked with its final
//     commit held for one round (stopAllSlots), the registration is
//     deleted when every member follows the assignment node
//     (deregisterEarly), and shutdown waits for the slots (awaitSlots,
//     slotsWG) until CloseTimeout; past it, the drains are cut short
//     (cutDrains) and the registration deleted at once. Otherwise closing
//     the session deletes the registration (if still there) and every
//     owner node in one transaction. The loop returns and closes
//     loopDone.
//  3. The tomb's other goroutines follow: watchHealth returns on loopDone,
//     dispatchCallbacks once loopDone is closed and slotsWG is done (no
//     slot starts after the loop returned), runKafkaWatch on the tomb
//     dying. A plan left by the loop ends once its reads return (at the
//     latest when the session is closed); the loop waits for it before it
//     returns.
//  4. finish, the one goroutine outside the tomb (started by Join), waits
//     for the tomb; when shutdown timed out it cuts the drains again (for
//     partitions started meanwhile), waits for slotsWG, closes conns, sets
//     closeErr, closes the outputs' channels, and closes finished last:
//     Close returns.
//
// The consumer's goroutines are the tomb's four (and a rebalance's plan
// while it is computed), finish, and one per slot (slotsWG); nothing of
// the consumer runs after finished is closed.
type closing struct {
	t       tomb.Tomb
	slotsWG sync.WaitGroup // one per slot goroutine
	// loopDone is closed when loop returns (after shutdown).
	loopDone chan struct{}
	// finished is closed once everything stopped and the channels were
	// closed (finish), closeErr set before.
	finished chan struct{}
	closeErr error
	// cutDrains: CloseTimeout passed; drains are cut short.
	cutDrains atomic.Bool
	// leaving: shutdown began; a slot that stops keeps its owner node, and
	// closing the session deletes them all, and the registration, in one
	// ZooKeeper transaction.
	leaving atomic.Bool
	// closeBegun: when Close or Interrupt was first called (unix ns, 0
	// before): CloseTimeout counts from then (see closeDeadline).
	closeBegun atomic.Int64
	// leaveForGood: Leave was called; shutdown deletes the restart marker.
	leaveForGood atomic.Bool
	// planLeft: closed once the plan a rebalance left when Close came
	// (planUnlessClosing) ended; nil if none. The loop's only.
	planLeft <-chan struct{}
}

func newClosing() closing {
	return closing{loopDone: make(chan struct{}), finished: make(chan struct{})}
}

// closeDeadline is when timeout (CloseTimeout) passes: counted from Close
// (or Interrupt), or from now when the consumer stops by itself.
func (cl *closing) closeDeadline(timeout time.Duration) time.Time {
	begun := time.Now()
	if ns := cl.closeBegun.Load(); ns != 0 {
		begun = time.Unix(0, ns)
	}
	return begun.Add(timeout)
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

// finish waits for the consumer's goroutines to end, cuts short the
// drains of partitions still stopping past CloseTimeout, waits for every
// partition, and then closes the connections and the channels: nobody
// sends on them any more. Done() is closed last.
func (c *Consumer) finish() {
	err := c.t.Wait()
	if err != nil { // CloseTimeout passed with partitions still stopping
		c.cutDrainsNow()
		err = fmt.Errorf("%w (their drains were cut short)", err)
	}
	c.slotsWG.Wait()
	c.conns.close(c.log)
	c.closeErr = err
	c.closeChannels()
	close(c.finished)
}

// shutdown revokes every slot, waits for them (bounded by CloseTimeout,
// counted from Close: see closeDeadline) and leaves the group. The slots
// stop fetching, drain and commit, but keep their owner nodes: once every
// slot has stopped, closing the session deletes the owner nodes (and the
// registration, if still there) at once, in the one transaction that ends
// the session, where deleting each would take a transaction of its own
// (101 for a member of 100 partitions). When every member follows the
// assignment node the registration goes first (deregisterEarly), so that
// the peers rebalance while the partitions drain; otherwise the peers see
// the member and its claims go together. If CloseTimeout passes first,
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
	began := time.Now()
	// What the loop was doing when Close came (a rebalance, a check).
	after := began.Sub(time.Unix(0, cmp.Or(c.closeBegun.Load(), began.UnixNano())))
	c.stopAllSlots()
	defer c.final.release()
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
	c.deregisterEarly()
	err := c.awaitSlots()
	close(done)
	stopped := time.Since(began)
	if err == nil {
		c.session.Close() // deletes the registration and every owner node
		c.log.Info("left group", "began_after", after, "partitions_stopped_in", stopped, "session_closed_in", time.Since(began)-stopped)
		return nil
	}
	// Past CloseTimeout: wait for ZooKeeper no more (closing the session,
	// in finish, deletes the registration anyway); a connected session
	// deletes it at once.
	c.session.Interrupt()
	if derr := within(min(c.cfg.SessionTimeout, c.cfg.CloseTimeout/10), func() error { return deregister(c.session, c.group, c.id) }); derr != nil {
		c.log.Warn("deregistering failed", "error", derr)
	}
	c.log.Info("left group", "began_after", after, "partitions_cut_after", stopped)
	return err
}

// deregisterEarly deletes the member's registration while its
// partitions drain, when every member of its last view computes from the
// group's assignment node (followers): the peers then rebalance beside
// the drain, their claims waiting on the owner nodes this member keeps
// until its session closes, and the oldest member that is not leaving
// writes the assignment (a leaving member writes nothing, and with
// members leaving oldest first, as deploys do, the writer would otherwise
// always be one). In a group with members that read the owners instead
// (Kafka's own consumer, older zkgroups) the registration goes with the
// session as before: those would fail their claims on the nodes still
// held and back off. It runs once the slots stop and their events are
// swallowed, so that none waits on it.
func (c *Consumer) deregisterEarly() {
	c.mu.Lock()
	all := c.allFollow
	c.mu.Unlock()
	if _, _, ok := c.session.Lease(); !all || !ok {
		return // without a lease the session is interrupted: nothing to ask
	}
	// Bounded as on the CloseTimeout path: the drains go on meanwhile,
	// but the wait for them (awaitSlots) begins after this.
	bound := min(c.cfg.SessionTimeout, c.cfg.CloseTimeout/10)
	if err := within(bound, func() error { return deregister(c.session, c.group, c.id) }); err != nil {
		c.log.Warn("deregistering before the drain failed; the registration goes with the session", "error", err)
	}
}

// finalCommittersLocked lists the partitions whose final commits Close's
// hold waits for: those whose partition manager runs. A slot claiming or
// reading its committed offset (a ZooKeeper or Kafka request under way,
// slow while the group rebalances) has handed nothing out, so it has
// nothing to commit, and would keep the others' final commits waiting.
// c.mu must be held.
func (c *Consumer) finalCommittersLocked() []TopicPartition {
	var tps []TopicPartition
	for _, sl := range c.slots {
		if sl.state != stopping && sl.pm.Load() != nil {
			tps = append(tps, sl.tp)
		}
	}
	return tps
}

// stopAllSlots revokes every slot not stopping yet, with Close's
// OnRevoked, their final commits held to share one round
// (finalcommits.go) from before the first can come.
func (c *Consumer) stopAllSlots() {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.cb.newGroupLocked(cbRevoked) // Close's OnRevoked
	c.final.begin(c.store, c.finalCommittersLocked())
	for _, sl := range c.slots {
		if sl.state != stopping {
			sl.stopLocked(g)
		}
	}
}

// awaitSlots waits for every slot to end, releasing the final commits'
// hold after CommitInterval at the latest, and returns an error once
// CloseTimeout passes first (the drains under way are then cut short).
func (c *Consumer) awaitSlots() error {
	waited := make(chan struct{})
	go func() { c.slotsWG.Wait(); close(waited) }()
	// The hold ends at the latest after CommitInterval: a final commit
	// waits for the others' drains no longer than a routine commit would.
	bound := time.NewTimer(c.cfg.Partition.CommitInterval)
	defer bound.Stop()
	closeBy := time.NewTimer(time.Until(c.closeDeadline(c.cfg.CloseTimeout)))
	defer closeBy.Stop()
	for {
		select {
		case <-waited:
			return nil
		case <-bound.C:
			c.final.release()
		case <-closeBy.C:
			err := fmt.Errorf("manager: close: partitions still stopping after %v", c.cfg.CloseTimeout)
			c.log.Error("close timed out", "error", err)
			c.final.release()
			c.cutDrainsNow() // here: the consumer's tomb waits for the slots (dispatchCallbacks)
			return err
		}
	}
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

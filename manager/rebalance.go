package manager

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/manager/assign"
	"github.com/zkgroup/zkgroup/partition"
)

// rebalance reads the members and the metadata, computes the assignment and
// starts or revokes slots. It returns the new watch on the members.
func (c *Consumer) rebalance() (<-chan zk.Event, error) {
	if !c.session.Status().HasSession {
		return nil, errors.New("no zookeeper session")
	}
	members, watch, err := readMembers(c.session, c.group, c.log)
	if err != nil {
		return nil, fmt.Errorf("reading members: %w", err)
	}
	snap := c.meta.Snapshot()
	topics := make([]string, 0, len(snap.Topics))
	var parts []assign.Partition
	for t, ps := range snap.Topics {
		topics = append(topics, t)
		for _, p := range ps {
			parts = append(parts, assign.Partition{Topic: t, ID: p.ID, Leader: p.Leader})
		}
	}
	sort.Strings(topics)
	a := c.strategy(assignMembers(members, topics), parts)
	mine := map[TopicPartition]bool{}
	for _, p := range a[c.id] {
		mine[TopicPartition{p.Topic, p.ID}] = true
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.id
	}
	c.rebalances.Add(1)

	c.mu.Lock()
	defer c.mu.Unlock()
	c.members = ids
	c.assigned = sortedTPs(mine)
	var revoked, added []TopicPartition
	for tp, sl := range c.slots {
		if !mine[tp] && sl.state != stopping {
			sl.state = stopping
			close(sl.revoke)
			revoked = append(revoked, tp)
		}
	}
	for tp := range mine {
		if _, ok := c.slots[tp]; ok {
			continue // running, claiming, or stopping (restarted when done)
		}
		sl := &slot{tp: tp, state: claiming, revoke: make(chan struct{})}
		c.slots[tp] = sl
		added = append(added, tp)
		c.slotsWG.Add(1)
		go c.runSlot(sl)
	}
	c.checkAppliedLocked()
	c.log.Info("rebalanced", "members", len(ids), "partitions", len(parts), "assigned", len(mine),
		"added", len(added), "revoked", len(revoked))
	return watch, nil
}

func sortedTPs(m map[TopicPartition]bool) []TopicPartition {
	out := make([]TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// checkAppliedLocked records when every assigned partition is fetching and
// nothing else is held.
func (c *Consumer) checkAppliedLocked() {
	want := map[TopicPartition]bool{}
	for _, tp := range c.assigned {
		want[tp] = true
	}
	applied := true
	for tp, sl := range c.slots {
		if !want[tp] || sl.state != running {
			applied = false
			break
		}
	}
	if applied && len(c.slots) != len(want) {
		applied = false
	}
	if applied && !c.applied && !c.dirtySince.IsZero() {
		c.lastDuration = time.Since(c.dirtySince)
		c.lastApplied = time.Now()
		c.dirtySince = time.Time{}
		c.log.Info("assignment applied", "partitions", len(want), "took", c.lastDuration)
	}
	c.applied = applied
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
			c.pastDelivered += ps.Delivered
			c.pastAcks += ps.Acks
		}
		delete(c.slots, sl.tp)
		if sl.state != stopping {
			c.restarts.Add(1) // lost or died: the next rebalance claims it again if wanted
		}
	case ev.started:
		if sl.state == claiming {
			sl.state = running
		}
	}
	c.checkAppliedLocked()
}

func (c *Consumer) send(ev slotEvent) {
	select {
	case c.events <- ev:
	case <-c.t.Dead():
	}
}

// runSlot claims a partition, runs its manager until revoked or lost, then
// drains (when revoked), commits and releases the claim.
func (c *Consumer) runSlot(sl *slot) {
	defer c.slotsWG.Done()
	defer c.send(slotEvent{sl: sl, done: true})
	log := c.log.With("topic", sl.tp.Topic, "partition", sl.tp.Partition)
	cl, err := acquire(c.session, c.group, sl.tp, c.id, c.health, log, sl.revoke, &c.claimWaits)
	if err != nil {
		return
	}
	select {
	case <-sl.revoke: // revoked while the claim was being made
		if err := cl.release(); err != nil {
			log.Warn("releasing the claim failed", "err", err)
		}
		return
	default:
	}
	// Claimed, not yet fetching: tell the embedder first.
	if c.cfg.OnAssigned != nil {
		c.cfg.OnAssigned(c.group, []TopicPartition{sl.tp})
	}
	params := partition.Params{
		Topic: sl.tp.Topic, Partition: sl.tp.Partition,
		Client: c.client, Consumer: c.consumer, Store: c.store, Committer: c.commits, Fence: cl,
		Funnel: c.funnel, Config: c.cfg.Partition, Logger: log, Report: c.report,
	}
	var stream *PartitionStream
	if c.cfg.Mode == ModePartitions {
		stream = &PartitionStream{topic: sl.tp.Topic, partition: sl.tp.Partition,
			ch: make(chan *partition.Message, c.cfg.ChannelBufferSize)}
		params.Out, params.CloseOut = stream.ch, true
	}
	pm, err := partition.Start(params)
	if err != nil {
		c.report(err)
		if c.cfg.OnRevoked != nil {
			c.cfg.OnRevoked(c.group, []TopicPartition{sl.tp})
		}
		_ = cl.release()
		return
	}
	sl.pm.Store(pm)
	if stream != nil {
		stream.generation = pm.Generation()
		select {
		case c.partitions <- stream:
		case <-sl.revoke:
		case <-cl.Lost():
		}
	}
	c.send(slotEvent{sl: sl, started: true})
	log.Debug("partition started", "generation", pm.Generation())

	drain := true
	select {
	case <-sl.revoke:
	case <-cl.Lost():
		drain = false
	case <-pm.Done():
		drain = false
	}
	if err := pm.Stop(drain); err != nil {
		c.report(err)
		log.Warn("partition stopped with an error", "err", err)
	}
	// Stopped and committed, still claimed: tell the embedder, then let go.
	if c.cfg.OnRevoked != nil {
		c.cfg.OnRevoked(c.group, []TopicPartition{sl.tp})
	}
	if err := cl.release(); err != nil {
		log.Warn("releasing the claim failed", "err", err)
	}
	log.Debug("partition released", "drained", drain)
}

// shutdown revokes every slot, waits for them (bounded by CloseTimeout) and
// deregisters.
func (c *Consumer) shutdown() error {
	c.mu.Lock()
	for _, sl := range c.slots {
		if sl.state != stopping {
			sl.state = stopping
			close(sl.revoke)
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
	var err error
	select {
	case <-waited:
	case <-time.After(c.cfg.CloseTimeout):
		err = fmt.Errorf("manager: close: partitions still stopping after %v", c.cfg.CloseTimeout)
		c.log.Error("close timed out", "err", err)
	}
	close(done)
	if derr := within(c.cfg.SessionTimeout, func() error { return deregister(c.session, c.group, c.id) }); derr != nil {
		c.log.Warn("deregistering failed", "err", derr)
	}
	if err == nil {
		<-waited
	}
	c.log.Info("left group")
	return err
}

// Stats is a snapshot of the consumer.
type Stats struct {
	Group, Instance string
	Members         []string
	Assigned        []TopicPartition
	Partitions      []partition.Stats
	// Ready: registered, and every assigned partition is fetching.
	Ready bool
	// SessionHealthy: the ZooKeeper session answered within 2/3 of its timeout.
	SessionHealthy bool
	SessionID      int64
	Rebalances     uint64
	// LastRebalanceDuration: from the first change noticed to every
	// assigned partition fetching, for the last rebalance.
	LastRebalanceDuration time.Duration
	LastRebalanceApplied  time.Time
	ClaimWaits            int64
	// Delivered and Acked count every message handed out and acked by this
	// consumer, over all ownerships (they never go down).
	Delivered, Acked  uint64
	DroppedErrors     uint64
	StaleAcks         uint64
	PartitionRestarts uint64
}

// Stats returns a snapshot. Safe for concurrent use; does no I/O.
func (c *Consumer) Stats() Stats {
	st := c.session.Status()
	c.mu.Lock()
	s := Stats{
		Group: c.group, Instance: c.id,
		Members:               append([]string(nil), c.members...),
		Assigned:              append([]TopicPartition(nil), c.assigned...),
		Ready:                 c.applied && st.HasSession && c.regEpoch == st.Epoch,
		LastRebalanceDuration: c.lastDuration,
		LastRebalanceApplied:  c.lastApplied,
	}
	s.Delivered, s.Acked = c.pastDelivered, c.pastAcks
	for _, sl := range c.slots {
		pm := sl.pm.Load()
		if pm == nil {
			continue
		}
		ps := pm.Stats()
		s.Delivered += ps.Delivered
		s.Acked += ps.Acks
		if sl.state == running {
			s.Partitions = append(s.Partitions, ps)
		}
	}
	c.mu.Unlock()
	sort.Slice(s.Partitions, func(i, j int) bool {
		a, b := s.Partitions[i], s.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	s.SessionHealthy, s.SessionID = st.Healthy, st.SessionID
	s.Rebalances = c.rebalances.Load()
	s.ClaimWaits = c.claimWaits.Load()
	s.DroppedErrors = c.droppedErrors.Load()
	s.StaleAcks = c.staleAcks.Load()
	s.PartitionRestarts = c.restarts.Load()
	return s
}

var _ = context.Background

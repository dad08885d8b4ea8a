package manager

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager/assign"
	"github.com/zkgroup/zkgroup/subscription"
)

// rebalance reads the members, the owners of the subscribed partitions and
// the metadata, computes the assignment and starts or revokes slots. It
// returns the new watches on the members and on the restart markers, and
// when the first grace of a member away ends (zero: none). causes are
// what triggered it.
func (c *Consumer) rebalance(causes map[RebalanceCause]bool) (ids, static <-chan zk.Event, graceEnd time.Time, err error) {
	began := time.Now()
	pl, err := c.computePlan(true)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	c.rebalances.Add(1)

	c.mu.Lock()
	defer c.mu.Unlock()
	graceEnd = c.noteViewLocked(pl, began)
	added, revoked := c.applyPlanLocked(pl)
	c.noteRebalance(causes, len(added), len(revoked))
	c.checkAppliedLocked()
	c.log.Info("rebalanced", "members", len(c.members), "away", len(c.away), "partitions", len(pl.parts), "assigned", len(pl.mine),
		"added", len(added), "revoked", len(revoked), "causes", causeList(causes), "read", time.Since(began),
		"owner_reads", c.ownerCache.lastNodesRead())
	return pl.watch, pl.staticWatch, graceEnd, nil
}

// noteViewLocked records what plan pl saw of the group: the members (and
// those away, whose first grace end it returns), their subscriptions and
// the metadata they select, the assignment, and what is reported about
// the members' registrations and strategies.
func (c *Consumer) noteViewLocked(pl *plan, began time.Time) (graceEnd time.Time) {
	var memberIDs []string
	for _, m := range pl.members {
		if !m.away {
			memberIDs = append(memberIDs, m.id)
		}
	}
	c.members = memberIDs
	graceEnd = c.noteAwayLocked(pl.members, began)
	c.kept = pl.kept
	c.memberSubs = nil
	for _, m := range pl.members {
		if m.sub != nil {
			c.memberSubs = append(c.memberSubs, m.sub)
		}
	}
	c.relevant = relevantView(pl.snap.Topics, c.memberSubs)
	c.noteBadRegistrationsLocked(pl.members)
	c.noteStrategiesLocked(pl.strategy)
	c.noteOldConsumersLocked(pl)
	c.assigned = sortedTPs(pl.mine)
	return graceEnd
}

// applyPlanLocked revokes the slots of partitions pl does not give this
// member and starts those of the partitions it gives and that have none;
// it returns the partitions added and revoked.
func (c *Consumer) applyPlanLocked(pl *plan) (added, revoked []TopicPartition) {
	var g *cbGroup // this rebalance's OnRevoked
	for tp, sl := range c.slots {
		if !pl.mine[tp] && sl.state != stopping {
			if g == nil {
				g = c.cb.newGroupLocked(cbRevoked)
			}
			sl.stopLocked(g)
			revoked = append(revoked, tp)
			delete(c.restartBackoff, tp)
		}
	}
	var free []*slot // started for partitions the plan saw unowned
	for tp := range pl.mine {
		if sl, ok := c.slots[tp]; ok {
			if sl.state == claiming {
				sl.seen, sl.seenSet = pl.owners.owner(tp), true
			}
			continue // running, claiming, or stopping (restarted when done)
		}
		sl := c.startSlotLocked(tp, 0)
		sl.seen, sl.seenSet = pl.owners.owner(tp), true
		if sl.seen == "" {
			free = append(free, sl)
		}
		added = append(added, tp)
	}
	if len(free) > 1 {
		tps := make([]TopicPartition, len(free))
		for i, sl := range free {
			tps[i] = sl.tp
		}
		b := newCreateBatch(tps)
		for _, sl := range free {
			sl.batch = b
		}
	}
	return added, revoked
}

// rebalanceLog is the consumer's part that counts and times the
// rebalances. Under Consumer.mu, except rebalances (atomic).
type rebalanceLog struct {
	// pendingSince: the first trigger not yet acted on; current: the
	// change being applied (nil: none); history: the last maxHistory
	// changes applied, numbered by seq.
	pendingSince time.Time
	current      *Rebalance
	history      []Rebalance
	seq          uint64
	causes       map[RebalanceCause]uint64
	// applied: every assigned partition is fetching and nothing else is
	// held (checkAppliedLocked).
	applied    bool
	rebalances atomic.Uint64
}

// noteRebalance notes a rebalance of causes that added and revoked partitions:
// when it moved something, it is what the next "applied" measures, from
// the first trigger that led to it (or from an earlier change still being
// applied, which it joins).
func (r *rebalanceLog) noteRebalance(causes map[RebalanceCause]bool, added, revoked int) {
	for why := range causes {
		r.causes[why]++
	}
	if added > 0 || revoked > 0 {
		if r.current == nil {
			r.current = &Rebalance{Started: r.pendingSince}
		}
		r.current.Causes = mergeCauses(r.current.Causes, causes)
		r.current.Added += added
		r.current.Revoked += revoked
	}
	r.pendingSince = time.Time{}
}

// noteApplied records whether the assignment is applied; the change under
// way, if any, is then done and kept in history, which it returns (nil:
// none ended).
func (r *rebalanceLog) noteApplied(applied bool) *Rebalance {
	r.applied = applied
	if !applied || r.current == nil {
		return nil
	}
	done := *r.current
	r.current = nil
	r.seq++
	done.Seq, done.Applied = r.seq, time.Now()
	done.Took = done.Applied.Sub(done.Started)
	r.history = append(r.history, done)
	if len(r.history) > maxHistory {
		r.history = slices.Delete(r.history, 0, len(r.history)-maxHistory)
	}
	return &done
}

// markDirtyLocked records when the first change not yet applied was noticed.
func (r *rebalanceLog) markDirtyLocked() {
	if r.pendingSince.IsZero() {
		r.pendingSince = time.Now()
	}
}

// plan is what a rebalance reads and computes before it acts on it.
type plan struct {
	members     []member
	watch       <-chan zk.Event // on the member list
	staticWatch <-chan zk.Event // on the restart markers (nil: none)
	// kept: the partitions the assignment gives members away (held for
	// their restart; nobody claims them).
	kept      map[TopicPartition]bool
	snap      metadata.Snapshot
	withParts []string // subscribed topics with partitions, sorted
	parts     []assign.Partition
	owners    ownersView
	mine      map[TopicPartition]bool
	// expected: every partition's member in the assignment (nil: none
	// computed), which the owners cache checks first at the next read.
	expected *ownerTable
	strategy strategyChoice // what mine was computed with
}

// computePlan reads the members, the owners of the subscribed partitions
// and the metadata, and computes this member's partitions. With
// createDirs it creates the owners node of every topic that has none
// (the only write).
func (c *Consumer) computePlan(createDirs bool) (*plan, error) {
	st := c.session.Status()
	if !st.HasSession {
		return nil, errors.New("no zookeeper session")
	}
	snap := c.meta.Snapshot()
	topics := slices.Sorted(maps.Keys(snap.Topics))
	counts := metadata.Counts(snap.Topics)
	withParts := slices.Sorted(maps.Keys(counts)) // the topics with partitions
	// The members and the owners are read at once: the owners through the
	// cache, which reads the owners nodes' stats and, where they changed,
	// their lists and the owner nodes it cannot vouch for (see
	// ownersCache).
	var (
		owners   ownersView
		noDir    []string
		ownerErr error
		read     sync.WaitGroup
	)
	read.Go(func() { owners, noDir, ownerErr = c.ownerCache.read(c.session, c.group, withParts, st.Epoch, counts) })
	members, watch, staticWatch, err := readMembers(c.session, c.group)
	read.Wait()
	if err != nil {
		return nil, fmt.Errorf("reading members: %w", err)
	}
	if ownerErr != nil {
		return nil, fmt.Errorf("reading owners: %w", ownerErr)
	}
	if createDirs {
		// One parent per topic, once, before any claim: claims racing to
		// find it missing would each cost ZooKeeper a failed create.
		for _, t := range noDir {
			if err := c.session.CreateParents(zkdata.OwnerTopicPath(c.group, t)); err != nil {
				return nil, fmt.Errorf("creating the owners node of %q: %w", t, err)
			}
		}
	}
	var parts []assign.Partition
	for _, t := range withParts {
		for _, p := range snap.Topics[t] {
			parts = append(parts, assign.Partition{Topic: t, ID: p.ID, Leader: p.Leader,
				Owner: owners.owner(TopicPartition{Topic: t, Partition: p.ID})})
		}
	}
	pl := &plan{members: members, watch: watch, staticWatch: staticWatch, snap: snap, withParts: withParts, parts: parts,
		owners: owners}
	c.assignPlan(pl, topics)
	c.ownerCache.expectOwners(pl.expected)
	return pl, nil
}

// assignPlan computes pl's assignment from its members and partitions:
// this member's partitions (mine), the strategy used, and the partitions
// kept for members away.
func (c *Consumer) assignPlan(pl *plan, topics []string) {
	// Members publishing different strategies would never agree:
	// compute with the oldest one's, or claim nothing when it is not
	// known here (see StrategyMismatchError).
	choice := chooseStrategy(c.strategy, pl.members)
	pl.strategy = choice
	pl.mine = map[TopicPartition]bool{}
	if choice.use == nil {
		return
	}
	a := choice.use.Assign(assignMembers(withoutExcluded(pl.members, choice.exclude), topics), pl.parts)
	for _, p := range a[c.id] {
		pl.mine[TopicPartition{Topic: p.Topic, Partition: p.ID}] = true
	}
	pl.expected = newOwnerTable(func(yield func(TopicPartition, string) bool) {
		for id, ps := range a {
			for _, p := range ps {
				if !yield(TopicPartition{Topic: p.Topic, Partition: p.ID}, id) {
					return
				}
			}
		}
	})
	if !hasAway(pl.members) {
		return
	}
	pl.kept = map[TopicPartition]bool{} // the partitions held for members away
	for _, m := range pl.members {
		if !m.away {
			continue
		}
		for _, p := range a[m.id] {
			pl.kept[TopicPartition{Topic: p.Topic, Partition: p.ID}] = true
		}
	}
}

// withoutExcluded returns members without those in exclude.
func withoutExcluded(members []member, exclude map[string]bool) []member {
	if len(exclude) == 0 {
		return members
	}
	out := make([]member, 0, len(members))
	for _, m := range members {
		if !exclude[m.id] {
			out = append(out, m)
		}
	}
	return out
}

// relevantView is the part of a metadata view that decides the
// assignment: the topics some member subscribes to, with their partitions.
func relevantView(view map[string][]metadata.Partition, subs []*subscription.Subscription) map[string][]metadata.Partition {
	out := map[string][]metadata.Partition{}
	for t, ps := range view {
		for _, s := range subs {
			if s.Match(t) {
				out[t] = ps
				break
			}
		}
	}
	return out
}

// metadataMatters reports whether the current metadata differs from the
// last rebalance's in a topic some member subscribes to (a new topic that
// nobody subscribes to, such as __consumer_offsets appearing, does not).
func (c *Consumer) metadataMatters() bool {
	snap := c.meta.Snapshot()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.relevant == nil {
		return true // no rebalance yet
	}
	return !metadata.EqualTopics(c.relevant, relevantView(snap.Topics, c.memberSubs))
}

func causeList(causes map[RebalanceCause]bool) []string {
	out := make([]string, 0, len(causes))
	for c := range causes {
		out = append(out, string(c))
	}
	sort.Strings(out)
	return out
}

// mergeCauses adds causes to list, keeping it sorted and without repeats.
func mergeCauses(list []RebalanceCause, causes map[RebalanceCause]bool) []RebalanceCause {
	for c := range causes {
		if !slices.Contains(list, c) {
			list = append(list, c)
		}
	}
	slices.Sort(list)
	return list
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

// Rebalance is one change of this member's assignment that moved
// something, from the first trigger noticed to every assigned partition
// fetching. A plain value.
type Rebalance struct {
	// Seq numbers the rebalances of this consumer from 1.
	Seq uint64
	// Started is when the first change that led to it was noticed;
	// Applied when every assigned partition was fetching again.
	Started, Applied time.Time
	// Took is Applied - Started.
	Took time.Duration
	// Causes are what triggered it (several when changes overlapped).
	Causes []RebalanceCause
	// Added and Revoked count the partitions this member claimed and
	// gave up.
	Added, Revoked int
}

// checkAppliedLocked records when every assigned partition is fetching and
// nothing else is held; only changes that moved something are timed, from
// their first trigger.
func (c *Consumer) checkAppliedLocked() {
	// Called at every slot event: no map built here (c.assigned holds
	// each partition once), so a rebalance of n partitions costs n
	// lookups per event, not n allocations.
	applied := len(c.slots) == len(c.assigned)
	for _, tp := range c.assigned {
		if !applied {
			break
		}
		sl := c.slots[tp]
		applied = sl != nil && sl.state == running
	}
	if r := c.noteApplied(applied); r != nil {
		c.log.Info("assignment applied", "partitions", len(c.assigned), "took", r.Took,
			"added", r.Added, "revoked", r.Revoked, "causes", r.Causes)
	}
}

// maxHistory bounds the rebalances kept for Stats.
const maxHistory = 64

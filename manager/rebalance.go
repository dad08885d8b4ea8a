package manager

import (
	"crypto/sha256"
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

// watches are the watches a rebalance set: on the members, on the
// restart markers and on the group's assignment node (nil: none).
type watches struct {
	ids, static, assignment <-chan zk.Event
}

// rebalanced is what a rebalance leaves the loop.
type rebalanced struct {
	watches
	// graceEnd: when the first grace of a member away ends (zero: none).
	graceEnd time.Time
	// awaiting: nothing was applied; the plan awaits the writer's
	// assignment (plan.awaitWriter), firstWait telling which wait.
	awaiting, firstWait bool
	// dropped: nothing was applied; Close began while the plan was
	// computed (its claims would be revoked at once).
	dropped bool
	// storedMzxid: the last write of the group's assignment node as the
	// plan read it (0: none).
	storedMzxid int64
}

// rebalance reads the members and the group's assignment (or the owners
// of the subscribed partitions) and the metadata, computes the assignment
// and starts or revokes slots. It returns the new watches and when the
// first grace of a member away ends. causes are what triggered it. A plan
// that awaits the writer as wait allows (see plan.awaitWriter) applies
// nothing and returns awaiting with the watches.
func (c *Consumer) rebalance(causes map[RebalanceCause]bool, wait writerWait) (rebalanced, error) {
	began := time.Now()
	pl, closing, err := c.planUnlessClosing(wait)
	if closing {
		return rebalanced{dropped: true}, nil
	}
	if err != nil {
		return rebalanced{}, err
	}
	res := rebalanced{watches: pl.watches, storedMzxid: pl.stored.mzxid}
	if pl.awaitWriter {
		res.awaiting, res.firstWait = true, !pl.fromStored
		return res, nil
	}
	select {
	case <-c.t.Dying():
		res.dropped = true
		return res, nil
	default:
	}
	c.rebalances.Add(1)
	c.lastFromOwners = !pl.fromStored
	c.lastStored = nil
	if pl.asStored {
		sum := pl.stored.sum // the node's bytes are what it would store
		c.lastStored = &sum
	} else if pl.assignment != nil {
		// As the writer stores it: the loop compares the node with it
		// (storedUnchanged).
		data, err := storedData(pl.digest, pl.inputIDs, pl.parts, pl.assignment)
		if err != nil {
			c.log.Warn("the assignment cannot be stored", "error", err)
		} else {
			sum := sha256.Sum256(data)
			c.lastStored = &sum
			if pl.write {
				c.writeStored(pl, data)
			}
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	res.graceEnd = c.noteViewLocked(pl, began)
	added, revoked := c.applyPlanLocked(pl)
	c.noteRebalance(causes, len(added), len(revoked))
	c.checkAppliedLocked()
	from := "owners"
	if pl.fromStored {
		from = "assignment"
	}
	c.log.Info("rebalanced", "members", len(c.members), "away", len(c.away), "partitions", len(pl.parts), "assigned", len(pl.mine),
		"added", len(added), "revoked", len(revoked), "causes", causeList(causes), "read", time.Since(began),
		"from", from, "owner_reads", pl.ownerReads)
	return res, nil
}

// beforePlan, when set (tests), is called with the consumer at the start
// of each plan a rebalance computes, on the goroutine that computes it.
var beforePlan atomic.Pointer[func(*Consumer)]

// planUnlessClosing computes a rebalance's plan (computePlan) on a
// goroutine of the consumer's tomb and returns it, or closing at once
// when Close begins first: the plan would be dropped anyway, and its
// ZooKeeper reads, queued on the member's session behind its own claims
// and releases, took up to 0.7 s at 10,000 partitions and 50 members,
// which the shutdown (drains, final commits) then waited for. The
// computation goes on by itself until its reads return (at the latest
// when the shutdown closes the session); nothing of it is applied. The
// loop waits for it before it closes the caches the plan reads through
// (planLeft).
func (c *Consumer) planUnlessClosing(wait writerWait) (pl *plan, closing bool, err error) {
	type result struct {
		pl  *plan
		err error
	}
	done, ended := make(chan result, 1), make(chan struct{})
	c.t.Go(func() error {
		defer close(ended)
		if f := beforePlan.Load(); f != nil {
			(*f)(c)
		}
		pl, err := c.computePlan(true, wait)
		done <- result{pl, err}
		return nil
	})
	select {
	case r := <-done:
		return r.pl, false, r.err
	case <-c.t.Dying():
		c.planLeft = ended
		return nil, true, nil
	}
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
	c.noteDepartedLocked(memberIDs, began)
	c.members = memberIDs
	c.allFollow, _, _ = followers(pl.members)
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
	for tp := range pl.mine {
		if sl, ok := c.slots[tp]; ok {
			if sl.state == claiming && !pl.fromStored {
				// A plan from the stored assignment leaves the holder
				// a waiting claim noted (claimWaitTooLong): it read no
				// owners.
				sl.seen, sl.seenSet = pl.ownerOf(tp), true
			}
			continue // running, claiming, or stopping (restarted when done)
		}
		sl := c.startSlotLocked(tp, 0)
		sl.seen, sl.seenSet = c.seenOwnerLocked(pl, tp), true
		added = append(added, tp)
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
	members []member
	watches watches
	// kept: the partitions the assignment gives members away (held for
	// their restart; nobody claims them).
	kept      map[TopicPartition]bool
	snap      metadata.Snapshot
	withParts []string // subscribed topics with partitions, sorted
	parts     []assign.Partition
	// owners: the owners read (nil when fromStored); ownerReads: the
	// nodes that read fetched.
	owners     ownersView
	ownerReads int
	// stored: the group's assignment node as read. fromStored: the
	// assignment was computed from it, not from the owners (see
	// storedAssignment); present: then, the members registered.
	stored     storedAssignment
	fromStored bool
	present    map[string]bool
	// digest: of the strategy's input; inputIDs: the members given to it;
	// assignment: its result; write: this member stores it; rewrite: the
	// stored one has the input's digest but does not fit it.
	digest     string
	inputIDs   []string
	assignment assign.Assignment
	write      bool
	rewrite    bool
	asStored   bool // assignment is the stored one, taken as it is
	// awaitWriter: nothing computed or applied; every member follows the
	// group's assignment node, and this member does not write it. Two
	// plans wait for the writer (as writerWait allows):
	//   - a new member's first, while the node is not fresh (the writer
	//     has not stored one since it registered): members started
	//     together that each computed from the owners would decide from
	//     different views of the members and owners, claim by them, and
	//     hand much back once the writer's assignment comes;
	//   - any, while the node was computed from another input than this
	//     plan's (follow): each member would place the partitions of
	//     members gone, or give some to members new, from the stale
	//     node by its own view of the members, which changes at a
	//     different moment for each during a rolling join or leave; it
	//     claimed what the writer then gave elsewhere (a partition went
	//     unconsumed for seconds, handed from member to member).
	awaitWriter bool
	follow      bool // the second wait is allowed (see awaitWriter)
	mine        map[TopicPartition]bool
	// expected: every partition's member in the assignment (nil: none
	// computed), which the owners cache checks first at the next read.
	expected *ownerTable
	strategy strategyChoice // what mine was computed with
}

// writerWait is what a plan may await instead of computing (see
// plan.awaitWriter); the zero value awaits nothing.
type writerWait struct {
	// first: a new member's first plan awaits a node that is not fresh.
	first bool
	// input: a plan awaits a node computed from another input, unless
	// the node's last write is notOn: a wait already ended on that write
	// (a writer that does not store, one whose assignment grew past
	// ZooKeeperMaxReply say, costs one wait per write, not per plan).
	input bool
	notOn int64
}

// computePlan reads the members and the group's assignment node, and the
// owners of the subscribed partitions unless it computes from that node
// (see storedAssignment), and computes this member's partitions. With
// createDirs it creates the owners node of every topic that has none
// when it read the owners (the only write; a claim creates the owners
// node it finds missing). It returns a plan that only awaits the writer
// (plan.awaitWriter) instead when wait allows.
func (c *Consumer) computePlan(createDirs bool, wait writerWait) (*plan, error) {
	st := c.session.Status()
	if !st.HasSession {
		return nil, errors.New("no zookeeper session")
	}
	snap := c.meta.Snapshot()
	topics := slices.Sorted(maps.Keys(snap.Topics))
	counts := metadata.Counts(snap.Topics)
	withParts := slices.Sorted(maps.Keys(counts)) // the topics with partitions
	// The members and the assignment node are read at once, and the
	// owners too while the last plan computed from them (a group with an
	// older zkgroup in it); otherwise they are read only if needed.
	var (
		stored      storedAssignment
		storedWatch <-chan zk.Event
		storedErr   error
		read        sync.WaitGroup
		owners      ownersView
		noDir       []string
		ownersErr   error
		ownersRead  = c.lastFromOwners
	)
	read.Go(func() { stored, storedWatch, storedErr = c.assignNode.read(c.session, c.group, true) })
	if ownersRead {
		read.Go(func() { owners, noDir, ownersErr = c.ownerCache.read(c.session, c.group, withParts, st.Epoch, counts) })
	}
	members, watch, staticWatch, err := readMembers(c.session, st.Epoch, c.group, &c.regs)
	read.Wait()
	if err != nil {
		return nil, fmt.Errorf("reading members: %w", err)
	}
	if storedErr != nil {
		return nil, fmt.Errorf("reading the group's assignment: %w", storedErr)
	}
	pl := &plan{members: members, watches: watches{ids: watch, static: staticWatch, assignment: storedWatch},
		snap: snap, withParts: withParts, stored: stored}
	all, writer, writerCzxid := followers(members)
	pl.fromStored = all && stored.freshFor(writerCzxid)
	if wait.first && all && !pl.fromStored && writer != c.id {
		pl.awaitWriter = true
		return pl, nil
	}
	pl.follow = wait.input && all && pl.fromStored && writer != c.id && stored.mzxid != wait.notOn
	if stored.err != nil && all && !c.storedErrNoted {
		c.storedErrNoted = true
		c.log.Warn("the group's assignment node is not used; computing from the owners", "error", stored.err)
	}
	if pl.fromStored {
		c.storedErrNoted = false
		pl.present = make(map[string]bool, len(members))
		for _, m := range members {
			if !m.away {
				pl.present[m.id] = true
			}
		}
	} else {
		if !ownersRead {
			owners, noDir, ownersErr = c.ownerCache.read(c.session, c.group, withParts, st.Epoch, counts)
		}
		if ownersErr != nil {
			return nil, fmt.Errorf("reading owners: %w", ownersErr)
		}
		pl.owners, pl.ownerReads = owners, c.ownerCache.lastNodesRead()
		if createDirs {
			// One parent per topic, once, before any claim: claims racing to
			// find it missing would each cost ZooKeeper a failed create.
			for _, t := range noDir {
				if err := c.session.CreateParents(zkdata.OwnerTopicPath(c.group, t)); err != nil {
					return nil, fmt.Errorf("creating the owners node of %q: %w", t, err)
				}
			}
		}
	}
	pl.fillParts()
	c.assignPlan(pl, topics)
	if pl.awaitWriter {
		return pl, nil
	}
	pl.write = all && writer == c.id && pl.assignment != nil &&
		(!pl.fromStored || stored.a.Digest != pl.digest || pl.rewrite)
	c.ownerCache.expectOwners(pl.expected)
	return pl, nil
}

// fillParts sets pl.parts: the partitions of the subscribed topics, in
// (topic, ID) order, each with its owner in the stored assignment or as
// read.
func (pl *plan) fillParts() {
	n := 0
	for _, t := range pl.withParts {
		n += len(pl.snap.Topics[t])
	}
	pl.parts = make([]assign.Partition, 0, n)
	for _, t := range pl.withParts {
		for _, p := range pl.snap.Topics[t] {
			owner := ""
			if pl.fromStored {
				owner = pl.stored.a.Owner(t, p.ID)
			} else {
				owner = pl.owners.owner(TopicPartition{Topic: t, Partition: p.ID})
			}
			pl.parts = append(pl.parts, assign.Partition{Topic: t, ID: p.ID, Leader: p.Leader, Owner: owner})
		}
	}
}

// seenOwnerLocked returns who pl saw holding tp, as ownerOf does, or,
// computed from the stored assignment, the member it gave tp to if that
// member departed (c.departed, which noteViewLocked updated for pl): one
// that left holds its owner nodes until its session closes, so a claim
// of its partition reads first and waits, where a create would fail (and
// fail every create sent with it in one transaction).
func (c *Consumer) seenOwnerLocked(pl *plan, tp TopicPartition) string {
	if id := pl.ownerOf(tp); id != "" || !pl.fromStored {
		return id
	}
	id := pl.stored.a.Owner(tp.Topic, tp.Partition)
	if _, ok := c.departed[id]; ok {
		return id
	}
	return ""
}

// ownerOf returns who pl saw holding tp ("" nobody): the owner read, or,
// computed from the stored assignment, the member it gives tp if that
// member is registered.
func (pl *plan) ownerOf(tp TopicPartition) string {
	if !pl.fromStored {
		return pl.owners.owner(tp)
	}
	if id := pl.stored.a.Owner(tp.Topic, tp.Partition); pl.present[id] {
		return id
	}
	return ""
}

// assignPlan computes pl's assignment from its members and partitions:
// this member's partitions (mine), the strategy used, and the partitions
// kept for members away. From the stored assignment, when it was computed
// from the same input (its digest), it is taken as it is; when it was not
// and pl.follow, nothing is computed (pl.awaitWriter).
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
	input := assignMembers(withoutExcluded(pl.members, choice.exclude), topics)
	pl.digest = assignmentDigest(choice.use.Name(), input, pl.parts)
	if pl.follow && pl.stored.a.Digest != pl.digest {
		pl.awaitWriter = true
		return
	}
	pl.inputIDs = make([]string, len(input))
	for i, m := range input {
		pl.inputIDs[i] = m.ID
	}
	var a assign.Assignment
	if pl.fromStored && pl.stored.a.Digest == pl.digest {
		if storedFits(pl.stored.a, input, pl.parts) {
			a, pl.asStored = fromStored(pl.stored.a, pl.parts), true
		} else {
			pl.rewrite = true // edited by hand, or written wrong
		}
	}
	if a == nil {
		a = choice.use.Assign(input, pl.parts)
		// Rewritten only when it differs: a strategy may leave
		// partitions to nobody.
		pl.rewrite = pl.rewrite && !sameAsStored(pl.stored.a, a, pl.parts)
	}
	pl.assignment = a
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

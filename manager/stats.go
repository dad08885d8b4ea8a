package manager

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// Stats is a snapshot of the consumer.
type Stats struct {
	Group, Instance string
	Members         []string
	// AwayMembers are the static members that stopped and whose
	// partitions the group keeps for their restart (Config.RestartGrace).
	AwayMembers []string
	Assigned    []TopicPartition
	Partitions  []PartitionStats
	// Ready: registered (and not out for Kafka unreachability), and every
	// assigned partition is fetching.
	Ready bool
	// SessionHealthy: the ZooKeeper session answered within 2/3 of its timeout.
	SessionHealthy bool
	SessionID      int64
	// SessionTimeout is the session timeout the server granted (the
	// asked Config.SessionTimeout until it has told).
	SessionTimeout time.Duration
	// Rebalances counts the assignments computed (most move nothing for
	// this member; History keeps those that did).
	Rebalances uint64
	// LoopAt is the latest instant the consumer's manager loop is known
	// to have been responsive: the time of the Stats call while the loop
	// waits for work, else when it took up the work it is doing. It falls
	// behind only while the loop is stuck at one piece of work: a
	// heartbeat for watchdogs that costs an idle member no wakeup.
	LoopAt time.Time
	// RebalancesByCause counts the assignments computed, per cause (one
	// computation may count under several causes when changes overlapped;
	// most computations after the first move nothing for this member).
	RebalancesByCause map[RebalanceCause]uint64
	// History: the last 64 rebalances of this member that moved
	// something, oldest first (see LastRebalance).
	History    []Rebalance
	ClaimWaits int64
	// Delivered and Acked count every message handed out and acked by this
	// consumer, over all ownerships (they never go down); so do
	// CommitErrors, FetchErrors and OffsetResets, its partitions' failed
	// commits, failed fetches and offsets reset by policy.
	Delivered, Acked                        uint64
	CommitErrors, FetchErrors, OffsetResets uint64
	DroppedErrors                           uint64
	// BadRegistrations: members whose registration could not be read at
	// the last rebalance (given no partitions). SquattedPartitions:
	// partitions this member should own that are held by an id that is
	// not a member. Both are also reported on Errors() (*NodeError).
	BadRegistrations, SquattedPartitions int
	// StrategyMismatches lists, sorted, the members that publish another
	// assignment strategy than Config.Strategy at the last rebalance
	// (each also reported on Errors() as a *StrategyMismatchError);
	// Strategy is the name of the strategy the last rebalance computed
	// with: Config.Strategy's, the oldest member's while they differ, or
	// "" when this member does not know the oldest member's and claims
	// nothing (and before the first rebalance).
	StrategyMismatches []string
	Strategy           string
	// StrategyConflicts has one entry per member of StrategyMismatches,
	// in the same order: what was reported on Errors() for it (both
	// members and strategies, the oldest member and the strategy in
	// force).
	StrategyConflicts []StrategyMismatchError
	// IncompatibleMembers lists, sorted by peer, the members publishing
	// no strategy (Kafka's old high-level consumer) that would compute
	// another assignment at the last rebalance, as reported on Errors().
	IncompatibleMembers []IncompatibleMemberError
	// MalformedTopics counts the topic nodes the metadata reader skipped
	// as malformed (each reported on Errors() too).
	MalformedTopics   uint64
	StaleAcks         uint64
	PartitionRestarts uint64
	// FencedCommits counts commit requests not sent, or torn down
	// unanswered, because the lease they were taken under had ended
	// (Kafka offset storage: offsets.KafkaStats.Fenced). Regressions
	// counts committed offsets read back that were written under an
	// older claim than one this member had seen commit the partition
	// (offsets.KafkaStats.Regressions): a stale commit landed. Both stay
	// 0 with ZooKeeper offset storage, whose writes never go backwards.
	FencedCommits, Regressions uint64
	// KafkaUnreachable: the member is out of the group because no Kafka
	// broker, or not the group's coordinator, answered for
	// Config.KafkaUnreachableTimeout: its partitions were stopped without
	// a commit and given up, and it joins again once Kafka answers.
	// KafkaUnreachableSince is when it began to leave and
	// KafkaUnreachableReason what did not answer (both zero while in the
	// group). KafkaLastAnswer is when Kafka last answered the member's
	// probe (every side it needs); KafkaLeaves counts the times it left.
	KafkaUnreachable       bool
	KafkaUnreachableSince  time.Time
	KafkaUnreachableReason string
	KafkaLastAnswer        time.Time
	KafkaLeaves            uint64
}

// Stats returns a snapshot. Safe for concurrent use; does no I/O.
func (c *Consumer) Stats() Stats {
	st := c.session.Status()
	c.mu.Lock()
	s := Stats{
		Group: c.group, Instance: c.id,
		Members:           append([]string(nil), c.members...),
		AwayMembers:       c.awayIDsLocked(),
		Assigned:          append([]TopicPartition(nil), c.assigned...),
		Ready:             c.applied && st.HasSession && c.regEpoch == st.Epoch && c.kafka.getPhase() == phaseIn,
		RebalancesByCause: maps.Clone(c.causes),
		History:           slices.Clone(c.history),
	}
	for p := range c.badNodes {
		if strings.HasPrefix(p, zkdata.IDsPath(c.group)+"/") {
			s.BadRegistrations++
		}
	}
	s.SquattedPartitions = c.squatted
	s.StrategyMismatches, s.Strategy = c.strategyMismatchesLocked(), c.strategyInForce
	s.StrategyConflicts = c.strategyConflictsLocked()
	s.IncompatibleMembers = slices.Clone(c.oldConflicts)
	s.LoopAt = time.Now()
	if busy := c.loopBusy.Load(); busy != 0 {
		s.LoopAt = time.Unix(0, busy)
	}
	s.MalformedTopics = c.malformedTopics.Load()
	tot := c.past
	for _, sl := range c.slots {
		pm := sl.pm.Load()
		if pm == nil {
			continue
		}
		ps := pm.Stats()
		tot.add(ps)
		if sl.state == running {
			s.Partitions = append(s.Partitions, ps)
		}
	}
	c.mu.Unlock()
	s.Delivered, s.Acked = tot.delivered, tot.acked
	s.CommitErrors, s.FetchErrors, s.OffsetResets = tot.commitErrors, tot.fetchErrors, tot.resets
	sort.Slice(s.Partitions, func(i, j int) bool {
		a, b := s.Partitions[i], s.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	s.SessionHealthy, s.SessionID, s.SessionTimeout = st.Healthy, st.SessionID, st.Timeout
	s.Rebalances = c.rebalances.Load()
	s.ClaimWaits = c.claimWaits.Load()
	s.DroppedErrors = c.droppedErrors.Load()
	s.StaleAcks = c.staleAcks.Load()
	s.PartitionRestarts = c.restarts.Load()
	if c.store != nil {
		if kst, ok := c.store.kafkaStats(); ok {
			s.FencedCommits, s.Regressions = kst.Fenced, kst.Regressions
		}
	}
	c.kafkaStats(&s)
	return s
}

// LastRebalance returns the newest rebalance of History: when it applied
// and how long it took from the first change noticed to every assigned
// partition fetching. ok is false before the first rebalance that moved
// something.
func (s Stats) LastRebalance() (r Rebalance, ok bool) {
	if len(s.History) == 0 {
		return Rebalance{}, false
	}
	return s.History[len(s.History)-1], true
}

// partitionTotals adds up partition counters over ownerships.
type partitionTotals struct {
	delivered, acked, commitErrors, fetchErrors, resets uint64
}

func (t *partitionTotals) add(ps PartitionStats) {
	t.delivered += ps.Delivered
	t.acked += ps.Acks
	t.commitErrors += ps.CommitErrors
	t.fetchErrors += ps.FetchErrors
	t.resets += ps.Resets
}

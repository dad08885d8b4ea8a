package manager

import (
	"sync/atomic"
	"time"

	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/subscription"
)

// groupView is the consumer's part that owns what the member knows of its
// group: its registration's epoch, what the last rebalance saw (the
// members, those away, the assignment, the subscriptions and the metadata
// they select), and the problems reported about the group's nodes and the
// peers' strategies. Under Consumer.mu; written by the loop (rebalance,
// reregister, the checks), read by Stats.
type groupView struct {
	regEpoch uint64 // the session epoch the member registered under
	members  []string
	// allFollow: every member of the last plan computes from the group's
	// assignment node (see followers).
	allFollow bool
	// away: the members away that the last plan kept in the group (see
	// static.go); kept: the partitions it held for them.
	away     map[string]awayMember
	kept     map[TopicPartition]bool
	assigned []TopicPartition
	// memberSubs and relevant: the members' subscriptions and the part of
	// the metadata they select, at the last rebalance (relevant is nil
	// before the first).
	memberSubs []*subscription.Subscription
	relevant   map[string][]metadata.Partition
	// badNodes: the ZooKeeper nodes reported on Errors() (by path, with
	// the error text), so that each problem is reported once while it
	// lasts; squatted: partitions held by a non-member now.
	badNodes map[string]string
	squatted int
	// nonMembers: when each holder a claim waits on was first seen not a
	// member (see noteSquatsLocked).
	nonMembers map[string]time.Time
	// departed: when each member that left lately was first missing from
	// a plan's members (see noteDepartedLocked).
	departed map[string]time.Time
	// malformedTopics counts the topic nodes reported malformed (atomic:
	// the metadata reader reports them).
	malformedTopics atomic.Uint64
	// strategyPeers: the members publishing another strategy (id to
	// name), as reported; strategyInForce: what the last rebalance
	// computed with ("" none), strategyOldest the member whose strategy
	// that is. See noteStrategiesLocked.
	strategyPeers   map[string]string
	strategyInForce string
	strategyOldest  string
	// oldPeers: the members publishing no strategy whose assignment
	// differs (id to reason), as reported; oldConflicts what the last
	// rebalance found. See noteOldConsumersLocked.
	oldPeers     map[string]string
	oldConflicts []IncompatibleMemberError
	// ownerCache: the owners as last read (its own lock; see
	// ownersCache).
	ownerCache ownersCache
	// The loop's only. storedErrNoted: the group's assignment node's
	// being unusable was logged (once until it is used again).
	// lastFromOwners: the last rebalance computed from the owners (the
	// next reads them beside the members; otherwise the unowned check
	// lists the owners only).
	storedErrNoted bool
	lastFromOwners bool
	// lastStored: the SHA-256 of the assignment node's data the last
	// rebalance would store (nil: none); the loop's only.
	lastStored *[32]byte
	// regs: the members' registrations as the last rebalance read them,
	// watched; the loop's only (see registrations).
	regs registrations
	// assignNode: the group's assignment node as last read, watched; the
	// loop's only.
	assignNode assignmentNode
}

func newGroupView() groupView {
	return groupView{badNodes: map[string]string{}, away: map[string]awayMember{}, nonMembers: map[string]time.Time{},
		departed: map[string]time.Time{}, regs: newRegistrations()}
}

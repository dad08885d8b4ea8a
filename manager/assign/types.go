package assign

import (
	"cmp"
	"slices"
)

// Partition is one partition of a topic together with the broker that
// should lead it and the member that currently holds its claim. Partition
// is a plain value and is safe for concurrent use.
//
// Leader is the partition's preferred leader (its first replica), which
// stays the same across broker restarts; -1 means unknown, and any negative
// Leader is treated as -1. Strategies only use it to group partitions, so a
// live leader works too, at the price of a different grouping whenever
// leadership moves.
//
// Owner is the ID of the member that currently holds the partition's claim
// in ZooKeeper, or "" when nobody does. An Owner that is not one of the
// strategy's members, or is not subscribed to the partition's topic, counts
// as "". Only owner-aware strategies (Balanced) read it; the others ignore
// it. The partitions of an Assignment returned by a Strategy have Owner ""
// (the map key says who owns them).
type Partition struct {
	Topic  string
	ID     int32
	Leader int32
	Owner  string
}

// Member is one member of the consumer group. Topics lists the topics the
// member subscribes to; a nil Topics means "every topic present in the
// input", while a non-nil empty Topics subscribes to nothing. Member is a
// plain value and is safe for concurrent use.
type Member struct {
	ID     string
	Topics []string
}

// Assignment maps a member ID to the partitions it owns, sorted by
// (Topic, ID). Every distinct member of the input has a key, possibly with an
// empty slice. An Assignment returned by a Strategy is owned by the caller;
// reading it concurrently is safe, mutating it is not.
type Assignment map[string][]Partition

// Strategy is an assignment strategy: a value with a name that computes an
// assignment of partitions to members.
//
// Name identifies the strategy among the members of a group: each member
// publishes it in its registration, and members that see a peer publish
// another name report it (the assignments would disagree). It is a short
// non-empty string without spaces or control characters; the strategies of
// this package are named by the Name constants and found by ByName.
//
// Assign's result depends only on the contents of its arguments (not on
// their order, on time or on randomness), the arguments are not modified,
// and every Strategy in this package is pure, never blocks and is safe for
// concurrent use; so must be any Strategy plugged in (see Func). The
// current owners travel in Partition.Owner; strategies that are not
// owner-aware ignore them.
type Strategy interface {
	Name() string
	Assign(members []Member, partitions []Partition) Assignment
}

// Func returns a Strategy named name whose Assign calls fn: a way to plug
// in a strategy of one's own, which must keep the promises of Strategy and
// should not take the name of one of this package's strategies. fn must
// not be nil.
func Func(name string, fn func(members []Member, partitions []Partition) Assignment) Strategy {
	return builtin{name: name, fn: fn}
}

// viewStrategy returns the Strategy named name whose fn fills out, which
// starts with every member of v and no partition, from the normalized
// input v; each member's list is sorted afterwards.
func viewStrategy(name string, fn func(v *view, out Assignment)) Strategy {
	return builtin{name: name, fn: func(members []Member, partitions []Partition) Assignment {
		v := normalize(members, partitions)
		out := v.newAssignment()
		fn(v, out)
		return out.sortAll()
	}}
}

// builtin is a Strategy made of a name and a function.
type builtin struct {
	name string
	fn   func(members []Member, partitions []Partition) Assignment
}

// Name returns the strategy's name.
func (b builtin) Name() string { return b.name }

// Assign computes the assignment.
func (b builtin) Assign(members []Member, partitions []Partition) Assignment {
	return b.fn(members, partitions)
}

// String returns the name, for logs and %v.
func (b builtin) String() string { return b.name }

// Owner returns the ID of the member that owns partition (topic, id) in a,
// and false when no member owns it. If a (built by hand) lists the partition
// under several members, the smallest member ID is returned so that the
// answer does not depend on map iteration order. Owner only reads a, never
// blocks, and is safe for concurrent use as long as a is not being mutated.
func (a Assignment) Owner(topic string, id int32) (string, bool) {
	var (
		owner string
		found bool
	)
	for member, parts := range a {
		if found && member >= owner {
			continue
		}
		if containsPartition(parts, topic, id) {
			owner, found = member, true
		}
	}
	return owner, found
}

// containsPartition reports whether parts holds (topic, id). It uses binary
// search when parts is sorted and falls back to a linear scan otherwise.
func containsPartition(parts []Partition, topic string, id int32) bool {
	if slices.IsSortedFunc(parts, comparePartitions) {
		_, ok := slices.BinarySearchFunc(parts, Partition{Topic: topic, ID: id},
			comparePartitions)
		return ok
	}
	return slices.ContainsFunc(parts, func(p Partition) bool {
		return p.Topic == topic && p.ID == id
	})
}

// comparePartitions orders partitions by (Topic, ID); Leader and Owner are
// ignored.
func comparePartitions(a, b Partition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

package metadata

import (
	"slices"
	"sort"
)

// Partition is one partition of a selected topic as the Watcher last read
// it from its topic node. It is a plain value; the Watcher never changes
// one it has handed out.
type Partition struct {
	Topic string
	ID    int32
	// Leader is the partition's preferred leader: the first replica of its
	// assignment (PreferredLeader(Replicas)), or -1 when the assignment is
	// empty. It is not the live leader: that one moves whenever a broker
	// stops or crashes, while the preferred one only moves when the
	// assignment is changed, and Kafka hands leadership back to it
	// (auto.leader.rebalance.enable). Assigning partitions by it keeps
	// the assignment stable across broker restarts; the consumers follow
	// the live leader by themselves. The Watcher never reads the live
	// leader (the partition state nodes).
	Leader   int32
	Replicas []int32 // assigned replicas, preferred replica first
}

// PreferredLeader returns the preferred leader of a replica assignment: its
// first replica, or -1 when it is empty. It is pure.
func PreferredLeader(replicas []int32) int32 {
	if len(replicas) == 0 {
		return -1
	}
	return replicas[0]
}

// Snapshot is a view of the cluster. It is shared: safe to read
// concurrently, never modified by the Watcher once handed out, and not to
// be modified by its holders.
type Snapshot struct {
	// Topics has a key for every topic registered in the cluster. The
	// value holds the partitions, sorted by ID, of topics selected by the
	// filter; it is nil for topics the filter does not select and for
	// selected topics whose metadata is malformed (they are logged).
	Topics map[string][]Partition
	// Version is 1 for the first view and increments on every change of
	// the view: a topic added or removed, or a selected topic's partition
	// count or replica assignment changed.
	Version uint64
}

// Selected returns the names, sorted, of the topics that have partitions in
// the snapshot. It does not block and is safe for concurrent use.
func (s Snapshot) Selected() []string {
	var out []string
	for t, ps := range s.Topics {
		if len(ps) > 0 {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// EqualTopics reports whether two views (Snapshot.Topics) have the same
// topics, and the same partitions with the same replica assignments for
// each; nil and empty partition lists are equal. Leader is derived from the
// assignment, so it is covered. It is pure and does not modify its
// arguments.
func EqualTopics(a, b map[string][]Partition) bool { return diffViews(a, b).empty() }

// change says how two views differ. Every list is sorted.
type change struct {
	added    []string // topics that appeared
	removed  []string // topics that disappeared
	resized  []string // topics whose partition count changed (selection changes included)
	replicas []string // topics whose replica assignment (or preferred leader) changed
}

// empty reports whether the views were equal.
func (c change) empty() bool {
	return len(c.added)+len(c.removed)+len(c.resized)+len(c.replicas) == 0
}

// diffViews compares two views; nil and empty partition lists are equal.
// It is pure.
func diffViews(old, cur map[string][]Partition) change {
	var c change
	for t := range cur {
		if _, ok := old[t]; !ok {
			c.added = append(c.added, t)
		}
	}
	for t, ops := range old {
		nps, ok := cur[t]
		if !ok {
			c.removed = append(c.removed, t)
			continue
		}
		if len(ops) != len(nps) {
			c.resized = append(c.resized, t)
			continue
		}
		if len(ops) > 0 && &ops[0] == &nps[0] {
			continue // the same list (a refresh keeps an unchanged topic's)
		}
		for i := range ops {
			if ops[i].ID != nps[i].ID || ops[i].Leader != nps[i].Leader || !slices.Equal(ops[i].Replicas, nps[i].Replicas) {
				c.replicas = append(c.replicas, t)
				break
			}
		}
	}
	sort.Strings(c.added)
	sort.Strings(c.removed)
	sort.Strings(c.resized)
	sort.Strings(c.replicas)
	return c
}

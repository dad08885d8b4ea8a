package metadata

import (
	"slices"
	"sort"
)

// Partition is one partition of a selected topic as the Watcher last read
// it. It is a plain value; the Watcher never changes one it has handed out.
type Partition struct {
	Topic    string
	ID       int32
	Leader   int32   // broker id of the leader; -1 when there is none (or its state node is missing)
	Replicas []int32 // assigned replicas, preferred replica first
}

// Snapshot is a view of the cluster. It is a deep copy owned by the caller:
// safe to read concurrently, and to modify without affecting the Watcher.
type Snapshot struct {
	// Topics has a key for every topic registered in the cluster. The
	// value holds the partitions, sorted by ID, of topics selected by the
	// filter; it is nil for topics the filter does not select and for
	// selected topics whose metadata is malformed (they are logged).
	Topics map[string][]Partition
	// Version is 1 for the first view and increments on every observed
	// change of the view.
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

// cloneView deep-copies a view.
func cloneView(v map[string][]Partition) map[string][]Partition {
	out := make(map[string][]Partition, len(v))
	for t, ps := range v {
		if ps == nil {
			out[t] = nil
			continue
		}
		cp := make([]Partition, len(ps))
		for i, p := range ps {
			p.Replicas = slices.Clone(p.Replicas)
			cp[i] = p
		}
		out[t] = cp
	}
	return out
}

// change says how two views differ. Every list is sorted.
type change struct {
	added    []string // topics that appeared
	removed  []string // topics that disappeared
	resized  []string // topics whose partition count changed (selection changes included)
	replicas []string // topics whose replica assignment changed
	leaders  int      // partitions, present in both, whose leader changed
}

// empty reports whether the views were equal.
func (c change) empty() bool {
	return len(c.added)+len(c.removed)+len(c.resized)+len(c.replicas) == 0 && c.leaders == 0
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
		replicasMoved := false
		for i := range ops {
			if ops[i].ID != nps[i].ID || !slices.Equal(ops[i].Replicas, nps[i].Replicas) {
				replicasMoved = true
			}
			if ops[i].Leader != nps[i].Leader {
				c.leaders++
			}
		}
		if replicasMoved {
			c.replicas = append(c.replicas, t)
		}
	}
	sort.Strings(c.added)
	sort.Strings(c.removed)
	sort.Strings(c.resized)
	sort.Strings(c.replicas)
	return c
}

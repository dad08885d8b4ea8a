package assign

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// class is a set of partitions whose topics share exactly the same eligible
// members.
type class struct {
	members []string    // eligible member IDs, ascending
	parts   []Partition // partitions, sorted by (Topic, ID)
	owners  []string    // index-aligned with parts: valid owner or ""
}

// classes groups the eligible partitions of v by their eligible member set.
// Classes come most constrained first (fewest eligible members), ties broken
// by the member IDs, so that later, less constrained classes can even out the
// load left by earlier ones. With uniform subscriptions there is one class.
func (v *view) classes() []class {
	if !v.uniform {
		return v.classesBySet()
	}
	if len(v.members) == 0 || len(v.parts) == 0 {
		return nil
	}
	// The strategies only read a class: the view's slices serve as they are.
	return []class{{members: v.members, parts: v.parts, owners: v.owners}}
}

// classesBySet is classes for any subscriptions: the topics grouped by
// their eligible member sets.
func (v *view) classesBySet() []class {
	byKey := make(map[string]*class)
	var keys []string
	of := make([]*class, len(v.topics)) // per topic: its class, nil if none
	size := make(map[*class]int)
	for t, topic := range v.topics {
		elig := v.eligible[topic]
		if len(elig) == 0 {
			continue
		}
		key := memberSetKey(elig)
		c, ok := byKey[key]
		if !ok {
			c = &class{members: elig}
			byKey[key] = c
			keys = append(keys, key)
		}
		of[t] = c
		lo, hi := v.topicRange(topic)
		size[c] += hi - lo
	}
	for c, n := range size {
		c.parts = make([]Partition, 0, n)
		c.owners = make([]string, 0, n)
	}
	for t, topic := range v.topics {
		c := of[t]
		if c == nil {
			continue
		}
		// Topics are visited in ascending order, so parts stay sorted by
		// (Topic, ID) and aligned with owners.
		lo, hi := v.topicRange(topic)
		c.parts = append(c.parts, v.parts[lo:hi]...)
		c.owners = append(c.owners, v.owners[lo:hi]...)
	}
	out := make([]class, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	slices.SortFunc(out, func(a, b class) int {
		if c := cmp.Compare(len(a.members), len(b.members)); c != 0 {
			return c
		}
		return slices.Compare(a.members, b.members)
	})
	return out
}

// memberSetKey encodes a sorted list of IDs unambiguously (IDs may contain
// any byte, so each one is length-prefixed).
func memberSetKey(ids []string) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(strconv.Itoa(len(id)))
		b.WriteByte(':')
		b.WriteString(id)
	}
	return b.String()
}

// waterFill splits total items among members so that, counting the load they
// already carry, the least loaded members receive first: each item goes to
// the member with the smallest (load + received so far), ties broken by
// position in members (ascending ID). It returns the count for each member,
// index-aligned with members. With equal starting loads this yields
// total/len(members) each and one more for the first total mod len(members).
func waterFill(members []string, load map[string]int, total int) []int {
	counts := make([]int, len(members))
	if len(members) == 0 {
		return counts
	}
	// Hand out whole rounds to everybody at the lowest level first, then go
	// item by item; this keeps the common equal-load case linear.
	for total > 0 {
		minIdx, minLoad, atMin, next := levels(members, load, counts)
		rounds := total / atMin
		if next != -1 && next-minLoad < rounds {
			rounds = next - minLoad
		}
		if rounds == 0 {
			// Fewer items than members at the minimum level: one each, in
			// ID order, starting from the first.
			for i := minIdx; i < len(members) && total > 0; i++ {
				if load[members[i]]+counts[i] == minLoad {
					counts[i]++
					total--
				}
			}
			continue
		}
		for i := range members {
			if load[members[i]]+counts[i] == minLoad {
				counts[i] += rounds
				total -= rounds
			}
		}
	}
	return counts
}

// levels returns, over the members' loads (load + counts), the first member
// at the lowest level, that level, how many members are at it, and the
// next level above it (-1: none).
func levels(members []string, load map[string]int, counts []int) (minIdx, minLoad, atMin, next int) {
	minLoad = load[members[0]] + counts[0]
	for i := 1; i < len(members); i++ {
		if l := load[members[i]] + counts[i]; l < minLoad {
			minIdx, minLoad = i, l
		}
	}
	next = -1
	for i := range members {
		l := load[members[i]] + counts[i]
		switch {
		case l == minLoad:
			atMin++
		case next == -1 || l < next:
			next = l
		}
	}
	return minIdx, minLoad, atMin, next
}

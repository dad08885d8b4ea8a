package assign

import (
	"cmp"
	"slices"
)

// LeaderAware assigns partitions so that each member consumes from as few
// distinct leader brokers as possible while the partition counts stay
// balanced; it is the project's default strategy.
//
// Algorithm:
//
//  1. Topics are grouped into classes of identical eligible member sets
//     (one class when every member subscribes to everything). Classes are
//     processed most constrained first.
//  2. For a class with P partitions, each eligible member gets a target
//     count by water-filling: the partition goes to the member with the
//     lowest load so far (counting earlier classes), ties to the lowest ID.
//     With uniform subscriptions this is floor(P/N) for everybody and one
//     more for the first P mod N members in ID order, so totals are
//     balanced to within one.
//  3. The class's partitions are grouped by leader; all partitions without a
//     leader (Leader -1) form one group of their own. Groups are kept sorted
//     by size descending, then leader ascending.
//  4. Whole groups, in that order, go to the member with the largest
//     remaining need (ties to the lowest ID) when they fit in it; this
//     spreads the big groups so that every member ends up with about the
//     same number of leaders.
//  5. The groups that did not fit are split: members, in ID order, fill
//     their remaining need c by taking the largest whole remaining group of
//     size <= c, or else the first c partitions (in (Topic, ID) order) of
//     the smallest group, whose rest goes back into the sorted list.
//
// Whole groups are never split, and splitting is left to the end, so a member
// spans a new leader only when it must. For B
// brokers leading P partitions evenly and N members with N dividing B, each
// member spans exactly B/N leaders when B divides P, and at most
// ceil(B/N)+1 otherwise (checked by the property tests).
//
// LeaderAware is pure, never blocks and is safe for concurrent use.
func LeaderAware(members []Member, partitions []Partition) Assignment {
	v := normalize(members, partitions)
	out := v.newAssignment()
	load := make(map[string]int, len(v.members))
	for _, c := range v.classes() {
		counts := waterFill(c.members, load, len(c.parts))
		for i, id := range c.members {
			load[id] += counts[i]
		}
		rest := placeWholeGroups(out, c.members, counts, leaderGroups(c.parts))
		for i, id := range c.members {
			out[id], rest = takeFromGroups(out[id], rest, counts[i])
		}
	}
	return out.sortAll()
}

// leaderGroup is the partitions of one class that share a leader.
type leaderGroup struct {
	leader int32
	parts  []Partition // sorted by (Topic, ID)
}

// compareGroups orders groups by size descending, then leader ascending.
func compareGroups(a, b leaderGroup) int {
	if c := cmp.Compare(len(b.parts), len(a.parts)); c != 0 {
		return c
	}
	return cmp.Compare(a.leader, b.leader)
}

// leaderGroups groups parts (sorted by (Topic, ID)) by leader and returns the
// groups sorted with compareGroups.
func leaderGroups(parts []Partition) []leaderGroup {
	idx := make(map[int32]int)
	var groups []leaderGroup
	for _, p := range parts {
		i, ok := idx[p.Leader]
		if !ok {
			i = len(groups)
			idx[p.Leader] = i
			groups = append(groups, leaderGroup{leader: p.Leader})
		}
		groups[i].parts = append(groups[i].parts, p)
	}
	slices.SortFunc(groups, compareGroups)
	return groups
}

// placeWholeGroups performs step 4 of the LeaderAware algorithm: each group,
// in order, goes whole to the member with the largest remaining need (ties
// to the lowest index) if that need is at least the group's size. needs is
// decremented in place; the groups that were not placed are returned, still
// sorted with compareGroups.
func placeWholeGroups(out Assignment, members []string, needs []int, groups []leaderGroup) []leaderGroup {
	var rest []leaderGroup
	for _, g := range groups {
		best := -1
		for i, n := range needs {
			if best == -1 || n > needs[best] {
				best = i
			}
		}
		if best == -1 || needs[best] < len(g.parts) {
			rest = append(rest, g)
			continue
		}
		id := members[best]
		out[id] = append(out[id], g.parts...)
		needs[best] -= len(g.parts)
	}
	return rest
}

// takeFromGroups moves need partitions from groups to dst following step 5
// of the LeaderAware algorithm and returns the grown dst and the remaining
// groups (still sorted with compareGroups).
func takeFromGroups(dst []Partition, groups []leaderGroup, need int) ([]Partition, []leaderGroup) {
	for need > 0 && len(groups) > 0 {
		// First group whose size is <= need (groups are sorted by size
		// descending).
		j, _ := slices.BinarySearchFunc(groups, need, func(g leaderGroup, n int) int {
			return cmp.Compare(n, len(g.parts))
		})
		if j < len(groups) {
			dst = append(dst, groups[j].parts...)
			need -= len(groups[j].parts)
			groups = slices.Delete(groups, j, j+1)
			continue
		}
		last := len(groups) - 1
		g := groups[last]
		dst = append(dst, g.parts[:need]...)
		g.parts = g.parts[need:]
		need = 0
		groups = groups[:last]
		at, _ := slices.BinarySearchFunc(groups, g, compareGroups)
		groups = slices.Insert(groups, at, g)
	}
	return dst, groups
}

package assign

import (
	"cmp"
	"slices"
)

// LeaderAware returns the strategy that assigns partitions so that each
// member consumes from as few distinct leader brokers as possible while the
// partition counts stay balanced. It ignores Partition.Owner, so a
// membership change moves most partitions; Balanced (the default) starts
// from the same placement and then moves as few as possible.
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
// The Strategy LeaderAware returns is pure, never blocks and is safe for
// concurrent use; its Name is NameLeaderAware.
func LeaderAware() Strategy { return viewStrategy(NameLeaderAware, assignLeaderAware) }

// assignLeaderAware computes LeaderAware's assignment of v into out.
func assignLeaderAware(v *view, out Assignment) {
	load := make(map[string]int, len(v.members))
	for _, c := range v.classes() {
		counts := waterFill(c.members, load, len(c.parts))
		for i, id := range c.members {
			load[id] += counts[i]
		}
		for i, idx := range leaderAwarePlace(leaderGroups(c.parts), counts) {
			id := c.members[i]
			for _, k := range idx {
				out[id] = append(out[id], c.parts[k])
			}
		}
	}
}

// leaderAwarePlace performs steps 4-5 of the LeaderAware algorithm on the
// leader groups of a class (from leaderGroups, left unmodified) for members
// whose target counts are counts (summing to the class's size). It returns,
// index-aligned with counts, the partition indices each member receives.
func leaderAwarePlace(groups []leaderGroup, counts []int) [][]int {
	got := make([][]int, len(counts))
	needs := slices.Clone(counts)
	rest := placeWholeGroups(got, needs, groups)
	for i := range got {
		got[i], rest = takeFromGroups(got[i], rest, needs[i])
	}
	return got
}

// leaderGroup is the partitions of one class that share a leader.
type leaderGroup struct {
	leader int32
	idx    []int // indices into the class's parts, ascending
}

// compareGroups orders groups by size descending, then leader ascending.
func compareGroups(a, b leaderGroup) int {
	if c := cmp.Compare(len(b.idx), len(a.idx)); c != 0 {
		return c
	}
	return cmp.Compare(a.leader, b.leader)
}

// leaderGroups groups parts (sorted by (Topic, ID)) by leader and returns the
// groups sorted with compareGroups.
func leaderGroups(parts []Partition) []leaderGroup {
	at := make(map[int32]int)
	var groups []leaderGroup
	for k, p := range parts {
		i, ok := at[p.Leader]
		if !ok {
			i = len(groups)
			at[p.Leader] = i
			groups = append(groups, leaderGroup{leader: p.Leader})
		}
		groups[i].idx = append(groups[i].idx, k)
	}
	slices.SortFunc(groups, compareGroups)
	return groups
}

// placeWholeGroups performs step 4 of the LeaderAware algorithm: each group,
// in order, goes whole to the member with the largest remaining need (ties
// to the lowest index) if that need is at least the group's size; got[i]
// collects member i's indices. needs is decremented in place; the groups
// that were not placed are returned, still sorted with compareGroups.
func placeWholeGroups(got [][]int, needs []int, groups []leaderGroup) []leaderGroup {
	var rest []leaderGroup
	for _, g := range groups {
		best := -1
		for i, n := range needs {
			if best == -1 || n > needs[best] {
				best = i
			}
		}
		if best == -1 || needs[best] < len(g.idx) {
			rest = append(rest, g)
			continue
		}
		got[best] = append(got[best], g.idx...)
		needs[best] -= len(g.idx)
	}
	return rest
}

// takeFromGroups moves need partitions from groups to dst following step 5
// of the LeaderAware algorithm and returns the grown dst and the remaining
// groups (still sorted with compareGroups).
func takeFromGroups(dst []int, groups []leaderGroup, need int) ([]int, []leaderGroup) {
	for need > 0 && len(groups) > 0 {
		// First group whose size is <= need (groups are sorted by size
		// descending).
		j, _ := slices.BinarySearchFunc(groups, need, func(g leaderGroup, n int) int {
			return cmp.Compare(n, len(g.idx))
		})
		if j < len(groups) {
			dst = append(dst, groups[j].idx...)
			need -= len(groups[j].idx)
			groups = slices.Delete(groups, j, j+1)
			continue
		}
		last := len(groups) - 1
		g := groups[last]
		dst = append(dst, g.idx[:need]...)
		g.idx = g.idx[need:]
		need = 0
		groups = groups[:last]
		at, _ := slices.BinarySearchFunc(groups, g, compareGroups)
		groups = slices.Insert(groups, at, g)
	}
	return dst, groups
}

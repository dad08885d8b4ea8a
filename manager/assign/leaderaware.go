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
//  4. Members are filled in ID order. While a member needs c more
//     partitions, it takes the largest whole group of size <= c; when every
//     remaining group is larger than c, it takes the first c partitions (in
//     (Topic, ID) order) of the smallest group, and the rest of that group
//     goes back into the sorted list.
//
// Taking whole groups first means a member spans a new leader only when it
// must, and a group is split at most once per member that touches it. For B
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
		groups := leaderGroups(c.parts)
		for i, id := range c.members {
			load[id] += counts[i]
			out[id], groups = takeFromGroups(out[id], groups, counts[i])
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

// takeFromGroups moves need partitions from groups to dst following step 4
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

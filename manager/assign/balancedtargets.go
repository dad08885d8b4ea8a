package assign

import (
	"cmp"
	"slices"
)

// balancedTargets returns how many of a class's total partitions each of
// members (ascending IDs) ends up with under Balanced, index-aligned with
// members. owned[i] is how many of them members[i] currently holds and
// load[id] what the member received from the classes planned before.
//
// Everybody gets q = total/n and r = total mod n members get q+1. The +1 go
// first to members that already hold more than q (so no member that can
// keep q+1 has to give one up), then to the rest; within each of the two
// sets, to the least loaded by earlier classes, ties to the lowest ID.
//
// The order is fixed except for the split into the two sets, and that split
// cannot change while the plan is being carried out: a member chosen for
// q+1 never drops below q+1 on the way, and one not chosen never climbs
// above q unless it started there. So every state on the way from the
// current owners to the plan yields the same targets.
func balancedTargets(members []string, owned []int, load map[string]int, total int) []int {
	n := len(members)
	t := make([]int, n)
	if n == 0 {
		return t
	}
	q, r := total/n, total%n
	for i := range t {
		t[i] = q
	}
	if r == 0 {
		return t
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	above := func(i int) int {
		if owned[i] > q {
			return 0
		}
		return 1
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(above(a), above(b)); c != 0 {
			return c
		}
		if c := cmp.Compare(load[members[a]], load[members[b]]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for _, i := range order[:r] {
		t[i]++
	}
	return t
}

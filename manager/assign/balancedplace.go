package assign

import (
	"cmp"
	"slices"
)

// release lets every member that holds more than its target keep its
// target's worth of the partitions it prefers (comparePrefKeys) and frees
// the rest. It returns the partitions to place (freed and unowned ones,
// ascending) and each member's remaining room.
//
// A fixed preference order makes this stable along a transition: the kept
// partitions are the member's favourites among what it holds, so they stay
// its favourites when some of the freed ones have already left.
func (p *classPlan) release() (pool, room []int) {
	count := make([]int, len(p.target))
	for _, m := range p.cur {
		if m >= 0 {
			count[m]++
		}
	}
	room = make([]int, len(p.target))
	held := make([][]prefKey, len(p.target)) // only for members over target
	for m, n := range count {
		if n > p.target[m] {
			held[m] = make([]prefKey, 0, n)
		} else {
			room[m] = p.target[m] - n
		}
	}
	for i, m := range p.cur {
		switch {
		case m < 0:
			pool = append(pool, i)
		case held[m] != nil:
			held[m] = append(held[m], p.prefKey(m, i))
		}
	}
	for m, keys := range held {
		if keys == nil {
			continue
		}
		slices.SortFunc(keys, comparePrefKeys)
		for _, k := range keys[p.target[m]:] {
			p.cur[k.i] = -1
			pool = append(pool, k.i)
		}
	}
	slices.Sort(pool)
	return pool, room
}

// placeUnit is a batch of equally ranked (member, partition) pairs for
// place: member m may take, in ascending order, the pool partitions of
// group g (only those whose home is m when tier is tierHome).
type placeUnit struct {
	tier int
	aff  uint64
	m, g int
}

// place gives every partition of pool (ascending) to a member with room,
// greedily over all (member, partition) pairs in one fixed order: by tier,
// then by the member's affinity for the partition's leader, then by member,
// group and partition index. The result is the unique stable matching for
// that order, so taking matched pairs out (partitions that already arrived)
// and lowering the members' room accordingly leaves the rest of the
// matching unchanged.
func (p *classPlan) place(pool, room []int) {
	pl := p.poolOf(pool, room)
	next := make(map[int]int, len(pl.groups)) // per group: first maybe-free entry
	for _, u := range p.placeUnits(pl, room) {
		if room[u.m] == 0 {
			continue
		}
		if u.tier == tierHome {
			p.take(pl.byHome[memberGroup{u.m, u.g}], u.m, room)
			continue
		}
		list := pl.byGroup[u.g]
		k := next[u.g]
		for ; k < len(list) && room[u.m] > 0; k++ {
			if i := list[k]; p.cur[i] < 0 {
				p.cur[i] = u.m
				room[u.m]--
			}
		}
		for k < len(list) && p.cur[list[k]] >= 0 {
			k++
		}
		next[u.g] = k
	}
}

// take gives member m, while it has room, the partitions of list that
// nobody holds.
func (p *classPlan) take(list []int, m int, room []int) {
	for _, i := range list {
		if room[m] == 0 {
			return
		}
		if p.cur[i] < 0 {
			p.cur[i] = m
			room[m]--
		}
	}
}

// memberGroup is a (member, group) pair of place's pool.
type memberGroup struct{ m, g int }

// placePool is place's pool by group (ascending within each) and, for the
// members with room, by (home member, group).
type placePool struct {
	byGroup map[int][]int
	byHome  map[memberGroup][]int
	groups  []int // sorted
}

func (p *classPlan) poolOf(pool, room []int) placePool {
	pl := placePool{byGroup: make(map[int][]int), byHome: make(map[memberGroup][]int)}
	for _, i := range pool {
		g := p.group[i]
		if _, ok := pl.byGroup[g]; !ok {
			pl.groups = append(pl.groups, g)
		}
		pl.byGroup[g] = append(pl.byGroup[g], i)
		if room[p.home[i]] > 0 {
			k := memberGroup{p.home[i], g}
			pl.byHome[k] = append(pl.byHome[k], i)
		}
	}
	slices.Sort(pl.groups)
	return pl
}

// placeUnits returns the units of the members with room, in place's
// order: by tier, then affinity (both descending), then member and group.
func (p *classPlan) placeUnits(pl placePool, room []int) []placeUnit {
	var units []placeUnit
	for m, r := range room {
		if r == 0 {
			continue
		}
		for _, g := range pl.groups {
			u := placeUnit{tier: tierOther, aff: p.affinity(m, g), m: m, g: g}
			if _, ok := slices.BinarySearch(p.homeGroups[m], g); ok {
				u.tier = tierHomeGroup
				if _, ok := pl.byHome[memberGroup{m, g}]; ok {
					units = append(units, placeUnit{tier: tierHome, aff: u.aff, m: m, g: g})
				}
			}
			units = append(units, u)
		}
	}
	slices.SortFunc(units, func(a, b placeUnit) int {
		if c := cmp.Compare(b.tier, a.tier); c != 0 {
			return c
		}
		if c := cmp.Compare(b.aff, a.aff); c != 0 {
			return c
		}
		if c := cmp.Compare(a.m, b.m); c != 0 {
			return c
		}
		return cmp.Compare(a.g, b.g)
	})
	return units
}

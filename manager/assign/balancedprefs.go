package assign

import (
	"cmp"
	"slices"
)

// classPlan is Balanced's working state for one class. Members are referred
// to by their index in class.members, partitions by their index in
// class.parts.
type classPlan struct {
	cur    []int    // per partition: current owner, -1 when unowned
	target []int    // per member: partitions it ends up with
	group  []int    // per partition: leader group
	gh     []uint64 // per group: leaderHash of its leader
	mh     []uint64 // per member: memberHash
	home   []int    // per partition: member LeaderAware would give it to
	// homeGroups[m] lists, ascending, the groups in which m has a home
	// partition.
	homeGroups [][]int
}

// newClassPlan computes the preferences of Balanced for class c with the
// given per-member targets. Everything here depends on the members, the
// partitions, their leaders and the targets only, never on the owners
// directly, so that it is the same for every state of a transition.
func newClassPlan(c *class, cur, target []int) *classPlan {
	p := &classPlan{
		cur:        cur,
		target:     target,
		group:      make([]int, len(c.parts)),
		mh:         make([]uint64, len(c.members)),
		home:       make([]int, len(c.parts)),
		homeGroups: make([][]int, len(c.members)),
	}
	for m, id := range c.members {
		p.mh[m] = memberHash(id)
	}
	groups := leaderGroups(c.parts)
	p.gh = make([]uint64, len(groups))
	for g, lg := range groups {
		p.gh[g] = leaderHash(lg.leader)
		for _, i := range lg.idx {
			p.group[i] = g
		}
	}
	seen := make([]int, len(groups)) // per group: the last member seen in it, plus one
	for m, idx := range leaderAwarePlace(groups, target) {
		for _, i := range idx {
			p.home[i] = m
			if g := p.group[i]; seen[g] != m+1 {
				seen[g] = m + 1
				p.homeGroups[m] = append(p.homeGroups[m], g)
			}
		}
		slices.Sort(p.homeGroups[m])
	}
	return p
}

// Preference tiers of a (member, partition) pair, best first.
const (
	tierOther     = iota // the partition's leader is not among the member's home leaders
	tierHomeGroup        // same leader as one of the member's home partitions
	tierHome             // the member's home partition
)

// tier returns the preference tier of giving partition i to member m.
func (p *classPlan) tier(m, i int) int {
	if p.home[i] == m {
		return tierHome
	}
	if _, ok := slices.BinarySearch(p.homeGroups[m], p.group[i]); ok {
		return tierHomeGroup
	}
	return tierOther
}

// affinity is member m's fixed liking for the leader of group g.
func (p *classPlan) affinity(m, g int) uint64 {
	return score(p.mh[m], p.gh[g])
}

// prefKey is where partition i stands in member m's preferences; see
// comparePrefKeys.
type prefKey struct {
	tier int
	aff  uint64
	g, i int
}

// prefKey returns partition i's standing in member m's preferences.
func (p *classPlan) prefKey(m, i int) prefKey {
	g := p.group[i]
	return prefKey{tier: p.tier(m, i), aff: p.affinity(m, g), g: g, i: i}
}

// comparePrefKeys orders partitions as one member prefers them, best
// first: by tier, then by affinity for their leader, then by group, then by
// index. It is a strict total order for the keys of one member.
func comparePrefKeys(a, b prefKey) int {
	if c := cmp.Compare(b.tier, a.tier); c != 0 {
		return c
	}
	if a.g != b.g {
		if c := cmp.Compare(b.aff, a.aff); c != 0 {
			return c
		}
		return cmp.Compare(a.g, b.g)
	}
	return cmp.Compare(a.i, b.i)
}

package assign

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// testClass is a class recomputed independently of classes.go: the
// partitions whose topics have exactly the same subscribed members.
type testClass struct {
	members []string
	parts   []Partition
}

// dedupe merges duplicate partitions as documented on normalize: the
// highest leader and the smallest valid owner win.
func dedupe(members []Member, ps []Partition) []Partition {
	type key struct {
		topic string
		id    int32
	}
	at := map[key]int{}
	var out []Partition
	for _, p := range ps {
		p.Leader = max(p.Leader, -1)
		p.Owner = validOwner(members, p)
		i, ok := at[key{p.Topic, p.ID}]
		if !ok {
			at[key{p.Topic, p.ID}] = len(out)
			out = append(out, p)
			continue
		}
		q := &out[i]
		q.Leader = max(q.Leader, p.Leader)
		if p.Owner != "" && (q.Owner == "" || p.Owner < q.Owner) {
			q.Owner = p.Owner
		}
	}
	return out
}

// testClasses groups the partitions of dedupe(ps) by the sorted IDs of the
// members subscribed to their topic; partitions nobody subscribes to are
// left out. Owners are valid owners or "".
func testClasses(members []Member, ps []Partition) []testClass {
	ps = dedupe(members, ps)
	var ids []string
	for _, m := range members {
		if !slices.Contains(ids, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	byKey := map[string]*testClass{}
	var keys []string
	classOf := map[string]*testClass{} // topic -> its class, nil if none
	for _, p := range ps {
		c, ok := classOf[p.Topic]
		if !ok {
			var elig []string
			for _, id := range ids {
				if subscribed(members, id, p.Topic) {
					elig = append(elig, id)
				}
			}
			if len(elig) > 0 {
				key := fmt.Sprintf("%q", elig)
				if c = byKey[key]; c == nil {
					c = &testClass{members: elig}
					byKey[key] = c
					keys = append(keys, key)
				}
			}
			classOf[p.Topic] = c
		}
		if c != nil {
			c.parts = append(c.parts, p)
		}
	}
	slices.Sort(keys)
	out := make([]testClass, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out
}

// validOwner returns p.Owner if it is a member subscribed to p.Topic, else "".
func validOwner(members []Member, p Partition) string {
	if p.Owner != "" && subscribed(members, p.Owner, p.Topic) {
		return p.Owner
	}
	return ""
}

// checkClassBalance returns a description of the first class whose counts
// over its members differ by more than one, or "".
func checkClassBalance(members []Member, ps []Partition, a Assignment) string {
	owner := owners(a)
	for _, c := range testClasses(members, ps) {
		count := map[string]int{}
		for _, p := range c.parts {
			count[owner[p.Topic][p.ID]]++
		}
		lo, hi := len(c.parts), 0
		for _, id := range c.members {
			lo, hi = min(lo, count[id]), max(hi, count[id])
		}
		if hi-lo > 1 {
			return fmt.Sprintf("class %v: counts %v", c.members, count)
		}
	}
	return ""
}

// minMoves is the least number of owner changes (a partition whose valid
// owner is "" always changes) from the owners in ps to any assignment in
// which every class is balanced to within one. Per class with P partitions,
// N members, q = P/N, r = P mod N and o_m the partitions member m validly
// holds: a balanced assignment gives r members q+1 and the rest q, and a
// member can keep at most min(o_m, its count); the best choice gives the
// q+1 to members holding more than q, so the most that can stay is
// sum(min(o_m, q)) + min(r, #{m: o_m > q}).
func minMoves(members []Member, ps []Partition) int {
	total := 0
	for _, c := range testClasses(members, ps) {
		held := map[string]int{}
		for _, p := range c.parts {
			if p.Owner != "" {
				held[p.Owner]++
			}
		}
		n := len(c.members)
		q, r := len(c.parts)/n, len(c.parts)%n
		kept, over := 0, 0
		for _, id := range c.members {
			kept += min(held[id], q)
			if held[id] > q {
				over++
			}
		}
		kept += min(r, over)
		total += len(c.parts) - kept
	}
	return total
}

// moves counts the partitions of ps with a subscribed member whose owner
// in a differs from their valid owner (so every unowned one counts).
func moves(members []Member, ps []Partition, a Assignment) int {
	owner := owners(a)
	n := 0
	for _, c := range testClasses(members, ps) {
		for _, p := range c.parts {
			if owner[p.Topic][p.ID] != p.Owner {
				n++
			}
		}
	}
	return n
}

// owners inverts a: topic -> partition ID -> member.
func owners(a Assignment) map[string]map[int32]string {
	out := map[string]map[int32]string{}
	for id, ps := range a {
		for _, p := range ps {
			if out[p.Topic] == nil {
				out[p.Topic] = map[int32]string{}
			}
			out[p.Topic][p.ID] = id
		}
	}
	return out
}

// withOwners returns a copy of ps with Owner set from a ("" when a does not
// assign the partition).
func withOwners(ps []Partition, a Assignment) []Partition {
	owner := owners(a)
	out := slices.Clone(ps)
	for i := range out {
		out[i].Owner = owner[out[i].Topic][out[i].ID]
	}
	return out
}

// randomOwners returns a copy of ps with random owners: unowned, a random
// member (eligible or not) or a departed member.
func randomOwners(rng *rand.Rand, members []Member, ps []Partition) []Partition {
	out := slices.Clone(ps)
	mode := rng.IntN(3) // 0: mostly unowned, 1: mixed, 2: mostly owned
	for i := range out {
		switch x := rng.IntN(10); {
		case len(members) > 0 && x >= 4-2*mode:
			out[i].Owner = members[rng.IntN(len(members))].ID
		case x == 0:
			out[i].Owner = "departed"
		default:
			out[i].Owner = ""
		}
	}
	return out
}

// intermediate returns a state on the way from the owners in ps to plan:
// every partition that plan moves is independently still at its old owner,
// unowned ("" or, when gone is set, a departed member) or already at its new
// owner; the others keep their owner.
func intermediate(rng *rand.Rand, ps []Partition, plan Assignment, gone string) []Partition {
	owner := owners(plan)
	out := slices.Clone(ps)
	for i := range out {
		to := owner[out[i].Topic][out[i].ID]
		if to == "" || to == out[i].Owner {
			continue
		}
		switch rng.IntN(3) {
		case 0: // still at the old owner
		case 1:
			out[i].Owner = ""
			if gone != "" && rng.IntN(2) == 0 {
				out[i].Owner = gone
			}
		case 2:
			out[i].Owner = to
		}
	}
	return out
}

// leaderSpan returns the total over members of the number of distinct
// leaders each reads from, and the largest such number.
func leaderSpan(a Assignment) (total, worst int) {
	for _, ps := range a {
		set := map[int32]bool{}
		for _, p := range ps {
			set[p.Leader] = true
		}
		total += len(set)
		worst = max(worst, len(set))
	}
	return total, worst
}

// renderOwners renders the owners of ps compactly for failure messages.
func renderOwners(ps []Partition) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%s/%d=%s ", p.Topic, p.ID, p.Owner)
	}
	return b.String()
}

// cases returns n, n/5 under the race detector, n/20 with -short.
func cases(n int) int {
	switch {
	case testing.Short():
		return max(1, n/20)
	case raceEnabled:
		return max(1, n/5)
	}
	return n
}

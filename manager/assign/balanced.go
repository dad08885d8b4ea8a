package assign

import "slices"

// Balanced returns the default strategy, which keeps every partition with its
// current owner (Partition.Owner) unless balance requires a move, and then
// moves as few partitions as possible, preferring placements that keep each
// member on few leader brokers. Every member computes it on its own from
// the owners it is given (zkgroup's members pass the group's stored
// assignment, or the owner nodes they read), so it is also built to give
// the same answer when members read the owners at different moments of
// the same hand-over.
//
// Balance. Topics are grouped into classes of identical eligible member
// sets (one class when every member subscribes to everything) and each
// class is balanced on its own: with P partitions over N eligible members,
// everybody gets P/N and P mod N members get one more, so the counts of
// every class differ by at most one. Within each class the members that
// get one more are, in this order: those already holding more than P/N
// (so that none of them has to give one up), then the least loaded by the
// classes planned before (most constrained classes first), then the lowest
// IDs. With uniform subscriptions the totals therefore differ by at most
// one as well; with mixed subscriptions the totals are levelled only as far
// as per-class balance allows.
//
// Movement. A member over its target keeps the partitions it prefers and
// releases the rest; a member under its target keeps everything and fills
// up from the released and unowned partitions. Nothing else moves, so the
// number of moved partitions is the least possible for per-class balance:
// a member joining a group of N-1 takes about P/N partitions, from the most
// loaded members, and a member leaving hands out exactly its own
// partitions.
//
// Leaders. Counts come first: leaders never cause a move, they only decide
// which of the partitions that must move do, and where they go. For each
// class the LeaderAware placement with the same targets is computed and
// called home; it depends on the membership, not on the owners. A member
// prefers (1) its home partitions, (2) partitions of a leader among its
// home partitions' leaders, (3) partitions of the leaders it has the
// highest rendezvous affinity for (a stable hash of member and leader),
// then (Topic, ID) order. Over-target members release their least
// preferred partitions; released and unowned partitions are matched
// greedily over all (member with room, partition) pairs ranked by the same
// preferences. So:
//
//   - starting from nothing owned (and with uniform subscriptions) the
//     result is exactly LeaderAware's: each member reads from as few
//     leaders as possible and the leaders are spread across the members;
//   - every hand-over goes towards the home placement of the new
//     membership; after a member restarts (leaves and joins again) the
//     group returns to about LeaderAware's spread (rolling restarts of
//     every member, measured: the members' leader counts summed equal
//     LeaderAware's);
//   - members joining one after the other cannot keep leader sets small,
//     since each joiner must take a few partitions from every member,
//     whatever their leaders: over join and leave sequences the summed
//     leader counts were 3.5x LeaderAware's from-nothing figure (Sticky:
//     5x), while LeaderAware moves most partitions at every step.
//
// Stability. Let plan(S) be the result for a state S of members,
// partitions and owners. Each partition that moves under plan(S) may,
// when another member reads the owners, still be at its old owner,
// unowned, or already at its new owner; for every such state S',
// plan(S') = plan(S) (and in particular plan is idempotent). This holds
// because the targets cannot change on the way (see the order above), the
// preferences depend on the membership and the targets only, a member's
// kept set is its favourites among what it holds, and the greedy matching
// is the unique stable matching for one fixed ranking of the pairs, which
// does not change when matched pairs are taken out. A partition whose
// claim was released but not yet taken must therefore be passed with
// Owner "" (or the old owner), never with a guess of the new one. When the
// membership changes during a hand-over, the next plan simply starts from
// the owners as they are.
//
// Leader should be the preferred leader (first replica), so that broker
// restarts do not change the preferences; with owners known a leader change
// moves nothing either way.
//
// Cost: O(P log P) for P partitions plus O(N*B log(N*B)) per class for N
// members and B leaders; about 3 ms at 10,000 partitions and 20 or 50
// members (BenchmarkBalanced).
//
// The Strategy Balanced returns is pure, never blocks and is safe for
// concurrent use; its Name is NameBalanced.
func Balanced() Strategy { return viewStrategy(NameBalanced, assignBalanced) }

// assignBalanced computes Balanced's assignment of v into out.
func assignBalanced(v *view, out Assignment) {
	load := make(map[string]int, len(v.members))
	for _, c := range v.classes() {
		index := make(map[string]int, len(c.members))
		for m, id := range c.members {
			index[id] = m
		}
		cur := make([]int, len(c.parts))
		owned := make([]int, len(c.members))
		for i, id := range c.owners {
			cur[i] = -1
			if m, ok := index[id]; ok && id != "" {
				cur[i] = m
				owned[m]++
			}
		}
		target := balancedTargets(c.members, owned, load, len(c.parts))
		p := newClassPlan(&c, cur, target)
		pool, room := p.release()
		p.place(pool, room)
		for m, id := range c.members {
			out[id] = slices.Grow(out[id], target[m])
		}
		for i, m := range p.cur {
			id := c.members[m]
			out[id] = append(out[id], c.parts[i])
		}
		for m, id := range c.members {
			load[id] += target[m]
		}
	}
}

package assign

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestBalancedProperties: over random states (random members, mixed
// subscriptions, random owners), Balanced is valid, independent of input
// order and duplicates, balanced per class, moves exactly the minimum,
// idempotent, and stable along every transition to its own plan.
func TestBalancedProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for iter := range cases(3000) {
		members, ps := randomCase(rng, 20, 300, iter%3 == 0)
		ps = randomOwners(rng, members, ps)
		a := Balanced().Assign(members, ps)
		if msg := checkAssignment(members, ps, a); msg != "" {
			t.Fatalf("iter %d: %s", iter, msg)
		}
		m2, p2 := shuffled(rng, members, ps)
		if b := Balanced().Assign(m2, p2); !reflect.DeepEqual(a, b) {
			t.Fatalf("iter %d: output depends on input order/duplicates", iter)
		}
		if msg := checkClassBalance(members, ps, a); msg != "" {
			t.Fatalf("iter %d: %s", iter, msg)
		}
		if got, want := moves(members, ps, a), minMoves(members, ps); got != want {
			t.Fatalf("iter %d: moved %d, minimum %d", iter, got, want)
		}
		if b := Balanced().Assign(members, withOwners(ps, a)); !reflect.DeepEqual(a, b) {
			t.Fatalf("iter %d: not idempotent", iter)
		}
		// Transitions are defined per partition, so start from the merged
		// duplicates (randomCase may draw a topic twice).
		base := dedupe(members, ps)
		for k := range 5 {
			mid := intermediate(rng, base, a, "departed")
			if b := Balanced().Assign(members, mid); !reflect.DeepEqual(a, b) {
				t.Fatalf("iter %d/%d: intermediate state gives another plan\nfrom %s\nmid  %s\nwant %v\ngot  %v",
					iter, k, renderOwners(base), renderOwners(mid), render(a), render(b))
			}
		}
	}
}

// moveStats accumulates moved partitions against the minimum and, for
// uniform subscriptions, against P/N.
type moveStats struct {
	n, maxOver       int
	sumMoved, sumMin float64
	nUniform         int
	sumRatio         float64
	maxRatio         float64
}

func (s *moveStats) add(moved, minimum, p, n int, uniform bool) {
	s.n++
	s.maxOver = max(s.maxOver, moved-minimum)
	s.sumMoved += float64(moved)
	s.sumMin += float64(minimum)
	if uniform && p > 0 {
		r := float64(moved) / (float64(p) / float64(n))
		s.nUniform++
		s.sumRatio += r
		s.maxRatio = max(s.maxRatio, r)
	}
}

func (s *moveStats) String() string {
	return fmt.Sprintf("%d cases, moved - minimum: max %d; mean moved %.2f, mean minimum %.2f; "+
		"uniform subscriptions (%d cases): moved / (P/N) mean %.3f, max %.3f",
		s.n, s.maxOver, s.sumMoved/float64(s.n), s.sumMin/float64(s.n),
		s.nUniform, s.sumRatio/float64(max(1, s.nUniform)), s.maxRatio)
}

// TestBalancedJoinLeave: from a settled assignment, one member joining or
// leaving moves at most the minimum + 1 (in fact exactly the minimum, see
// the log), and intermediate states of that hand-over give the same plan.
// For uniform subscriptions N is the larger group size, so P/N is the
// joiner's share or the leaver's partitions.
func TestBalancedJoinLeave(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	var joins, leaves moveStats
	for iter := range cases(1500) {
		uniform := iter%3 != 0
		members, ps := randomCase(rng, 20, 1200, uniform)
		settled := withOwners(ps, Balanced().Assign(members, randomOwners(rng, members, ps)))
		p := len(dedupe(members, ps))
		// Join.
		joiner := Member{ID: fmt.Sprintf("joiner-%x", rng.Uint32())}
		if !uniform && len(ps) > 0 && rng.IntN(2) == 0 {
			joiner.Topics = []string{ps[0].Topic}
		}
		after := append(members[:len(members):len(members)], joiner)
		a := Balanced().Assign(after, settled)
		got, want := moves(after, settled, a), minMoves(after, settled)
		if got > want+1 {
			t.Fatalf("iter %d: join moved %d > minimum %d + 1", iter, got, want)
		}
		if b := Balanced().Assign(after, intermediate(rng, settled, a, "")); !reflect.DeepEqual(a, b) {
			t.Fatalf("iter %d: join: an intermediate state gives another plan", iter)
		}
		joins.add(got, want, p, len(after), uniform)
		// Leave.
		if len(members) < 2 {
			continue
		}
		k := rng.IntN(len(members))
		rest := append(append([]Member{}, members[:k]...), members[k+1:]...)
		a = Balanced().Assign(rest, settled)
		got, want = moves(rest, settled, a), minMoves(rest, settled)
		if got > want+1 {
			t.Fatalf("iter %d: leave moved %d > minimum %d + 1", iter, got, want)
		}
		if b := Balanced().Assign(rest, intermediate(rng, settled, a, members[k].ID)); !reflect.DeepEqual(a, b) {
			t.Fatalf("iter %d: leave: an intermediate state gives another plan", iter)
		}
		leaves.add(got, want, p, len(members), uniform)
	}
	t.Logf("joins: %v", &joins)
	t.Logf("leaves: %v", &leaves)
}

// TestBalancedFromNothingIsLeaderAware: with uniform subscriptions and no
// owners, Balanced gives exactly LeaderAware's assignment.
func TestBalancedFromNothingIsLeaderAware(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for iter := range cases(1000) {
		members, ps := randomCase(rng, 20, 600, true)
		if a, b := Balanced().Assign(members, ps), LeaderAware().Assign(members, ps); !reflect.DeepEqual(a, b) {
			t.Fatalf("iter %d: Balanced %v\nLeaderAware %v", iter, render(a), render(b))
		}
	}
}

// leaderCase builds p partitions over three topics with b leaders, either
// round-robin or random, and n members.
func leaderCase(rng *rand.Rand, p, b, n int, roundRobin bool) ([]Member, []Partition) {
	ps := make([]Partition, p)
	for i := range ps {
		ps[i] = Partition{Topic: fmt.Sprintf("t%d", i%3), ID: int32(i / 3), Leader: int32(rng.IntN(b))}
		if roundRobin {
			ps[i].Leader = int32(i % b)
		}
	}
	members := make([]Member, n)
	for i := range members {
		members[i].ID = fmt.Sprintf("m%02d-%x", i, rng.Uint32())
	}
	return members, ps
}

var leaderScenarios = []struct{ p, b, n int }{
	{24, 3, 3}, {1000, 6, 10}, {1000, 12, 20}, {120, 5, 7}, {300, 30, 12}, {1000, 3, 20}, {64, 8, 4},
}

// TestBalancedRollingRestart: restarting every member in turn (leave, then
// join again) twice over brings the leader spread back to LeaderAware's:
// the moves go towards the home placement, which only depends on the
// membership. Summed over the scenarios, the members' leader counts stay
// within 5% of LeaderAware's.
func TestBalancedRollingRestart(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	var after, scratch int
	for _, sc := range leaderScenarios {
		for rep := range 4 {
			members, ps := leaderCase(rng, sc.p, sc.b, sc.n, rep%2 == 0)
			cur := withOwners(ps, Balanced().Assign(members, ps))
			for range 2 {
				for k := range members {
					rest := append(append([]Member{}, members[:k]...), members[k+1:]...)
					cur = withOwners(ps, Balanced().Assign(rest, cur))
					cur = withOwners(ps, Balanced().Assign(members, cur))
				}
			}
			a, _ := leaderSpan(Balanced().Assign(members, cur))
			b, _ := leaderSpan(LeaderAware().Assign(members, ps))
			after += a
			scratch += b
		}
	}
	t.Logf("leaders summed over members: %d after rolling restarts, %d for LeaderAware", after, scratch)
	if float64(after) > 1.05*float64(scratch) {
		t.Errorf("after rolling restarts %d leaders > 1.05 x LeaderAware's %d", after, scratch)
	}
}

// TestBalancedJoinSequenceLeaders: the leader spread while members join
// one by one and then leave one by one. Minimal movement forces spread
// here (a joiner takes a few partitions from every member, whatever their
// leaders), so it is bounded by Sticky's, which moves as little with no
// regard for leaders, not by LeaderAware's from nothing.
func TestBalancedJoinSequenceLeaders(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	var got, ref, sticky int
	for _, sc := range leaderScenarios {
		for rep := range 2 {
			all, ps := leaderCase(rng, sc.p, sc.b, 2*sc.n, rep%2 == 0)
			cur := withOwners(ps, nil)
			step := func(members []Member) {
				a := Balanced().Assign(members, cur)
				cur = withOwners(ps, a)
				x, _ := leaderSpan(a)
				y, _ := leaderSpan(LeaderAware().Assign(members, ps))
				z, _ := leaderSpan(Sticky().Assign(members, ps))
				got += x
				ref += y
				sticky += z
			}
			for n := 1; n <= len(all); n++ {
				step(all[:n])
			}
			for n := len(all) - 1; n >= 1; n-- {
				step(all[len(all)-n:])
			}
		}
	}
	t.Logf("leaders summed over members and steps: %d; LeaderAware from nothing %d (%.2fx); Sticky %d (%.2fx)",
		got, ref, float64(got)/float64(ref), sticky, float64(sticky)/float64(ref))
	// Sticky moves as little, with no regard for leaders: Balanced must
	// spread them no wider.
	if got > sticky {
		t.Errorf("Balanced's leader spread over the joins and leaves %d > Sticky's %d", got, sticky)
	}
}

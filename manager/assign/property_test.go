package assign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestPropertyValidAndDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for iter := range cases(1500) {
		uniform := iter%2 == 0
		members, ps := randomCase(rng, 10, 200, uniform)
		m2, p2 := shuffled(rng, members, ps)
		// In (Topic, ID) order, as zkgroup's members pass them (normalize
		// then skips its sort).
		p3 := slices.Clone(ps)
		slices.SortStableFunc(p3, comparePartitions)
		for _, s := range strategies {
			a := s.fn.Assign(members, ps)
			if msg := checkAssignment(members, ps, a); msg != "" {
				t.Fatalf("iter %d %s: %s", iter, s.name, msg)
			}
			if b := s.fn.Assign(m2, p2); !reflect.DeepEqual(a, b) {
				t.Fatalf("iter %d %s: output depends on input order/duplicates", iter, s.name)
			}
			if b := s.fn.Assign(members, p3); !reflect.DeepEqual(a, b) {
				t.Fatalf("iter %d %s: output differs for the input in (Topic, ID) order", iter, s.name)
			}
			if !uniform {
				continue
			}
			if s.name == NameRange {
				for topic, sp := range perTopicSpread(a) {
					if sp > 1 {
						t.Fatalf("iter %d range: topic %s spread %d", iter, topic, sp)
					}
				}
			} else if sp := spread(a); sp > 1 {
				t.Fatalf("iter %d %s: spread %d > 1", iter, s.name, sp)
			}
		}
	}
}

func perTopicSpread(a Assignment) map[string]int {
	counts := map[string]map[string]int{}
	for id, ps := range a {
		for _, p := range ps {
			if counts[p.Topic] == nil {
				counts[p.Topic] = map[string]int{}
			}
			counts[p.Topic][id]++
		}
	}
	out := map[string]int{}
	for topic, c := range counts {
		lo, hi := math.MaxInt, 0
		for id := range a {
			lo, hi = min(lo, c[id]), max(hi, c[id])
		}
		out[topic] = hi - lo
	}
	return out
}

// movedCount counts partitions of ps whose owner differs between a and b.
func movedCount(a, b Assignment, ps []Partition) int {
	n := 0
	for _, p := range ps {
		x, _ := a.Owner(p.Topic, p.ID)
		y, _ := b.Owner(p.Topic, p.ID)
		if x != y {
			n++
		}
	}
	return n
}

// TestStickyMovement checks the bound documented on Sticky: one member
// joining or leaving (N = larger group size) moves at most
// ceil(P/N) + ceil(1.5*sqrt(P)) partitions, and on average at most
// 1.25 * P/N.
func TestStickyMovement(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	var sumMoved, sumIdeal float64
	for iter := range 2000 {
		members, ps := randomCase(rng, 9, 200, true)
		joiner := Member{ID: fmt.Sprintf("joiner-%x", rng.Uint64())}
		before := Sticky().Assign(members, ps)
		after := Sticky().Assign(append(members, joiner), ps)
		n, p := len(members)+1, len(ps)
		moved := movedCount(before, after, ps)
		bound := (p+n-1)/n + int(math.Ceil(1.5*math.Sqrt(float64(p))))
		if moved > bound {
			t.Fatalf("iter %d: join to N=%d over P=%d moved %d > bound %d", iter, n, p, moved, bound)
		}
		// Minimum possible: the joiner's share.
		if got := len(after[joiner.ID]); moved < got {
			t.Fatalf("iter %d: moved %d < joiner's %d", iter, moved, got)
		}
		sumMoved += float64(moved)
		sumIdeal += float64(p) / float64(n)
	}
	if ratio := sumMoved / sumIdeal; ratio > 1.25 {
		t.Errorf("mean moved = %.3f x P/N, want <= 1.25", ratio)
	} else {
		t.Logf("mean moved = %.3f x P/N", ratio)
	}
}

// TestLeaderAwareSpan: N members, B brokers leading P partitions evenly
// (round-robin leadership), N divides B: each member spans at most
// ceil(B/N)+1 leaders, and exactly B/N when B also divides P.
func TestLeaderAwareSpan(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for iter := range 2000 {
		n := 1 + rng.IntN(10)
		b := n * (1 + rng.IntN(4))
		p := b + rng.IntN(200-b+1)
		exact := iter%2 == 0
		if exact {
			p -= p % b
		}
		var ps []Partition
		nt := 1 + rng.IntN(4)
		for i := range p {
			ps = append(ps, Partition{Topic: fmt.Sprintf("t%d", i%nt), ID: int32(i / nt), Leader: int32(100 + (i*7)%b)})
		}
		rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		members := make([]Member, n)
		for i := range members {
			members[i].ID = fmt.Sprintf("m%x", rng.Uint32())
		}
		a := LeaderAware().Assign(members, ps)
		limit := (b+n-1)/n + 1
		if exact {
			limit = b / n
		}
		for id, owned := range a {
			leaders := map[int32]bool{}
			for _, q := range owned {
				leaders[q.Leader] = true
			}
			if len(leaders) > limit {
				t.Fatalf("iter %d: N=%d B=%d P=%d: %s spans %d leaders > %d", iter, n, b, p, id, len(leaders), limit)
			}
		}
	}
}

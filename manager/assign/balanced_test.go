package assign

import (
	"fmt"
	"testing"
)

// owned builds partitions of one topic with leader 1 and the given owners
// (index = ID).
func owned(topic string, owners ...string) []Partition {
	out := make([]Partition, len(owners))
	for i, o := range owners {
		out[i] = Partition{Topic: topic, ID: int32(i), Leader: 1, Owner: o}
	}
	return out
}

func TestBalanced(t *testing.T) {
	abc := []Member{{ID: "c"}, {ID: "b"}, {ID: "a"}}
	runTable(t, Balanced(), append(forcedCases(),
		tableCase{
			name:    "balanced owners stay",
			members: []Member{{ID: "a"}, {ID: "b"}},
			parts:   owned("t", "b", "a", "b", "a"),
			want:    map[string]string{"a": "t/1 t/3", "b": "t/0 t/2"},
		},
		tableCase{
			// One leader group; home (LeaderAware with 2 each) is a: 0 1,
			// b: 2 3, c: 4 5. a releases its non-home t/2; b keeps its
			// home t/3 and the lower t/4, releases t/5; c takes both.
			name:    "join takes one from each loaded member",
			members: abc,
			parts:   owned("t", "a", "a", "a", "b", "b", "b"),
			want:    map[string]string{"a": "t/0 t/1", "b": "t/3 t/4", "c": "t/2 t/5"},
		},
		tableCase{
			// Home for {a, b} is a: 0 1 2, b: 3 4 5: b takes its home t/4
			// first, a the other.
			name:    "leave hands out only the leaver's partitions",
			members: []Member{{ID: "a"}, {ID: "b"}},
			parts:   owned("t", "a", "a", "b", "b", "c", "c"),
			want:    map[string]string{"a": "t/0 t/1 t/5", "b": "t/2 t/3 t/4"},
		},
		tableCase{
			name:    "the extra partition stays with whoever has it (b)",
			members: []Member{{ID: "a"}, {ID: "b"}},
			parts:   owned("t", "b", "b", "b", "a", "a"),
			want:    map[string]string{"a": "t/3 t/4", "b": "t/0 t/1 t/2"},
		},
		tableCase{
			name:    "the extra partition stays with whoever has it (a)",
			members: []Member{{ID: "a"}, {ID: "b"}},
			parts:   owned("t", "b", "b", "a", "a", "a"),
			want:    map[string]string{"a": "t/2 t/3 t/4", "b": "t/0 t/1"},
		},
		tableCase{
			// x/1's owner is gone and a does not read y: both count as
			// unowned. Class {b} (y) first, then {a, b} (x): one each.
			name:    "invalid owners count as unowned",
			members: []Member{{ID: "a", Topics: []string{"x"}}, {ID: "b"}},
			parts: []Partition{
				{Topic: "x", ID: 0, Leader: 1, Owner: "b"},
				{Topic: "x", ID: 1, Leader: 1, Owner: "gone"},
				{Topic: "y", ID: 0, Leader: 1, Owner: "a"},
			},
			want: map[string]string{"a": "x/1", "b": "x/0 y/0"},
		},
		tableCase{
			// Each class is balanced on its own (LeaderAware would give a
			// both x partitions to level the totals).
			name:    "mixed subscriptions: per-class balance",
			members: xyMembers,
			parts:   xyParts,
			want:    map[string]string{"a": "x/0", "b": "x/1 y/0 y/1"},
		},
		tableCase{
			// Class {b, c} (y, one partition) gives its extra to b; class
			// {a, b, c} (x, four) gives its extra to the least loaded, a
			// before c by ID. Totals 2, 2, 1.
			name:    "mixed subscriptions: extras level the totals",
			members: []Member{{ID: "a", Topics: []string{"x"}}, {ID: "b"}, {ID: "c"}},
			parts:   append(parts("x", 1, 1, 1, 1), parts("y", 1)...),
			want:    map[string]string{"a": "x/0 x/1", "b": "x/2 y/0", "c": "x/3"},
		},
	))
}

// settle returns ps owned as Balanced assigns them to members from nothing.
func settle(members []Member, ps []Partition) []Partition {
	return withOwners(ps, Balanced().Assign(members, withOwners(ps, nil)))
}

func consumers(n int) []Member {
	out := make([]Member, n)
	for i := range out {
		out[i].ID = fmt.Sprintf("consumer-%d", i)
	}
	return out
}

// brokerParts builds p partitions of topic "t" led round-robin by b
// brokers.
func brokerParts(p, b int) []Partition {
	out := make([]Partition, p)
	for i := range out {
		out[i] = Partition{Topic: "t", ID: int32(i), Leader: int32(i % b)}
	}
	return out
}

// TestBalancedMoves: the hand-checked movement cases. LeaderAware's moves
// for the same change are logged for comparison.
func TestBalancedMoves(t *testing.T) {
	for _, tc := range []struct {
		name          string
		p, b          int
		before, after []Member
		want          int
	}{
		{"24 partitions, 3 -> 4 members", 24, 3, consumers(3), consumers(4), 6},
		{"24 partitions, 3 -> 2 members", 24, 3, consumers(3), consumers(3)[1:], 8},
		{"1000 partitions, 9 -> 10 members", 1000, 12, consumers(9), consumers(10), 100},
		{"1000 partitions, 10 -> 9 members", 1000, 12, consumers(10), consumers(10)[1:], 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := brokerParts(tc.p, tc.b)
			cur := settle(tc.before, ps)
			a := Balanced().Assign(tc.after, cur)
			if msg := checkAssignment(tc.after, ps, a); msg != "" {
				t.Fatal(msg)
			}
			if sp := spread(a); sp > 1 {
				t.Errorf("spread %d", sp)
			}
			if got := moves(tc.after, cur, a); got != tc.want {
				t.Errorf("moved %d, want %d", got, tc.want)
			}
			before := LeaderAware().Assign(tc.before, ps)
			t.Logf("moved %d; LeaderAware moves %d", tc.want, movedCount(before, LeaderAware().Assign(tc.after, ps), ps))
		})
	}
}

// TestBalancedSequentialJoins: 1,000 partitions, 10 members joining one
// after the other. Every join moves exactly the joiner's share, so the
// claims add up to 1000 x (1 + 1/2 + ... + 1/10), about 2,929.
func TestBalancedSequentialJoins(t *testing.T) {
	ps := brokerParts(1000, 12)
	all := consumers(10)
	cur := withOwners(ps, nil)
	claims, leaderAware := 0, 0
	prev := Assignment{}
	for n := 1; n <= len(all); n++ {
		a := Balanced().Assign(all[:n], cur)
		moved := moves(all[:n], cur, a)
		if share := len(a[all[n-1].ID]); moved != share {
			t.Errorf("join %d moved %d, joiner's share %d", n, moved, share)
		}
		claims += moved
		cur = withOwners(ps, a)
		la := LeaderAware().Assign(all[:n], ps)
		leaderAware += movedCount(prev, la, ps)
		prev = la
	}
	if claims < 2920 || claims > 2940 {
		t.Errorf("claims = %d, want about 2,929", claims)
	}
	t.Logf("claims %d (LeaderAware: %d)", claims, leaderAware)
}

// TestBalancedLeaderChange: with owners known, a change of leaders (a
// broker restart, if live leaders were passed) moves nothing.
func TestBalancedLeaderChange(t *testing.T) {
	ps := brokerParts(240, 6)
	members := consumers(7)
	cur := settle(members, ps)
	for i := range cur {
		if cur[i].Leader == 2 {
			cur[i].Leader = 3
		}
	}
	if got := moves(members, cur, Balanced().Assign(members, cur)); got != 0 {
		t.Errorf("leader change moved %d", got)
	}
}

// TestBalancedGolden pins Balanced's output for a fixed input: members of
// a group may run different builds, so the result (and the hashes behind
// the leader affinity) must not change by accident.
func TestBalancedGolden(t *testing.T) {
	if got, want := leaderHash(7), uint64(0xd6ff3b141669712c); got != want {
		t.Errorf("leaderHash(7) = %#x, want %#x", got, want)
	}
	members := []Member{{ID: "alpha"}, {ID: "beta"}, {ID: "gamma"}, {ID: "delta", Topics: []string{"orders"}}}
	var ps []Partition
	for i := range 14 {
		ps = append(ps, Partition{Topic: "orders", ID: int32(i), Leader: int32(i % 4)})
	}
	for i := range 5 {
		ps = append(ps, Partition{Topic: "events", ID: int32(i), Leader: int32(i % 3)})
	}
	owners := []string{"alpha", "alpha", "beta", "", "gamma", "alpha", "beta", "beta", "gone", "alpha", "gamma", "", "alpha", "beta",
		"gamma", "delta", "alpha", "", "beta"}
	for i := range ps {
		ps[i].Owner = owners[i]
	}
	// events (alpha, beta, gamma) first: the two extras go to alpha and
	// beta (nobody holds more than one; lowest IDs), delta's claim on
	// events/1 is invalid. orders: alpha (5) and beta (4) hold more than 3,
	// so they keep 4; alpha releases orders/9; delta and gamma fill up.
	runTable(t, Balanced(), []tableCase{{name: "golden", members: members, parts: ps, want: map[string]string{
		"alpha": "events/2 events/3 orders/0 orders/1 orders/5 orders/12",
		"beta":  "events/1 events/4 orders/2 orders/6 orders/7 orders/13",
		"delta": "orders/8 orders/9 orders/11",
		"gamma": "events/0 orders/3 orders/4 orders/10",
	}}})
}

package assign

import (
	"maps"
	"testing"
)

type tableCase struct {
	name    string
	members []Member
	parts   []Partition
	want    map[string]string
}

func runTable(t *testing.T, fn Strategy, cases []tableCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := fn.Assign(tc.members, tc.parts)
			if msg := checkAssignment(tc.members, tc.parts, a); msg != "" {
				t.Fatalf("invalid assignment: %s", msg)
			}
			if got := render(a); !maps.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

// mixed: a reads t1,t2; b reads t1; c reads everything (nil Topics).
var mixedMembers = []Member{
	{ID: "c"},
	{ID: "b", Topics: []string{"t1"}},
	{ID: "a", Topics: []string{"t2", "t1"}},
}

var mixedParts = append(append(parts("t2", 1, 1, 2), parts("t1", 1, 2, 3, 1)...), parts("t3", -1)...)

// Two classes: a reads x (2 partitions, leader 1); b reads x and y (2,
// leader 2).
var (
	xyMembers = []Member{{ID: "a", Topics: []string{"x"}}, {ID: "b"}}
	xyParts   = append(parts("x", 1, 1), parts("y", 2, 2)...)
)

// moreMembersByID: the strategies that deal out in member ID order (Range,
// RoundRobin, LeaderAware) leave the last members without a partition.
var moreMembersByID = tableCase{
	name:    "more members than partitions",
	members: []Member{{ID: "d"}, {ID: "c"}, {ID: "b"}, {ID: "a"}},
	parts:   parts("t", 1, 2),
	want:    map[string]string{"a": "t/0", "b": "t/1", "c": "", "d": ""},
}

// common cases shared by every strategy (answer forced by the constraints).
func forcedCases() []tableCase {
	return []tableCase{
		{name: "no members", parts: parts("t", 1, 2), want: map[string]string{}},
		{name: "no partitions", members: []Member{{ID: "a"}}, want: map[string]string{"a": ""}},
		{
			name:    "single member takes all subscribed",
			members: []Member{{ID: "a", Topics: []string{"x"}}},
			parts:   append(parts("x", 1, -1), parts("y", 1)...),
			want:    map[string]string{"a": "x/0 x/1"},
		},
		{
			name:    "disjoint subscriptions",
			members: []Member{{ID: "a", Topics: []string{"x"}}, {ID: "b", Topics: []string{"y"}}, {ID: "c", Topics: []string{}}},
			parts:   append(parts("x", 1, 2), parts("y", -1)...),
			want:    map[string]string{"a": "x/0 x/1", "b": "y/0", "c": ""},
		},
	}
}

func TestRange(t *testing.T) {
	runTable(t, Range(), append(forcedCases(),
		tableCase{
			name:    "contiguous ranges, first gets extra",
			members: []Member{{ID: "b"}, {ID: "a"}},
			parts:   parts("t", 1, 1, 1, 1, 1),
			want:    map[string]string{"a": "t/0 t/1 t/2", "b": "t/3 t/4"},
		},
		tableCase{
			name:    "mixed subscriptions",
			members: mixedMembers,
			parts:   mixedParts,
			want: map[string]string{
				"a": "t1/0 t1/1 t2/0 t2/1",
				"b": "t1/2",
				"c": "t1/3 t2/2 t3/0",
			},
		},
		moreMembersByID,
		tableCase{
			name:    "per topic, not overall",
			members: []Member{{ID: "a"}, {ID: "b"}},
			parts:   append(parts("x", 1), parts("y", 1)...),
			want:    map[string]string{"a": "x/0 y/0", "b": ""},
		},
		tableCase{
			name:    "duplicates",
			members: []Member{{ID: "b"}, {ID: "a", Topics: []string{"t"}}, {ID: "a", Topics: []string{}}, {ID: "b"}},
			parts:   append(parts("t", 1, 1, 1), parts("t", -1, 5)...),
			want:    map[string]string{"a": "t/0 t/1", "b": "t/2"},
		},
	))
}

func TestRoundRobin(t *testing.T) {
	runTable(t, RoundRobin(), append(forcedCases(),
		tableCase{
			name:    "dealt in turn across topics",
			members: []Member{{ID: "b"}, {ID: "a"}},
			parts:   append(parts("x", 1), parts("y", 1, 1)...),
			want:    map[string]string{"a": "x/0 y/1", "b": "y/0"},
		},
		tableCase{
			name:    "mixed subscriptions skip",
			members: mixedMembers,
			parts:   mixedParts,
			want: map[string]string{
				"a": "t1/0 t1/3 t2/1",
				"b": "t1/1",
				"c": "t1/2 t2/0 t2/2 t3/0",
			},
		},
		moreMembersByID,
	))
}

func TestLeaderAware(t *testing.T) {
	runTable(t, LeaderAware(), append(forcedCases(),
		tableCase{
			name:    "one leader per member",
			members: []Member{{ID: "b"}, {ID: "a"}},
			parts:   parts("t", 1, 2, 1, 2),
			want:    map[string]string{"a": "t/0 t/2", "b": "t/1 t/3"},
		},
		tableCase{
			// Groups: 5 {1,2,3}, -1 {0,4}, 7 {5}. a takes the leaderless
			// pair; b takes 7 whole and splits one off 5; c takes the rest.
			name:    "leaderless group and split",
			members: []Member{{ID: "c"}, {ID: "b"}, {ID: "a"}},
			parts:   parts("t", -1, 5, 5, 5, -1, 7),
			want:    map[string]string{"a": "t/0 t/4", "b": "t/1 t/5", "c": "t/2 t/3"},
		},
		tableCase{
			// Class {b} (y) goes first, then class {a,b} (x) levels loads.
			name:    "mixed subscriptions balanced by water-filling",
			members: xyMembers,
			parts:   xyParts,
			want:    map[string]string{"a": "x/0 x/1", "b": "y/0 y/1"},
		},
		moreMembersByID,
		tableCase{
			name:    "duplicate partition keeps known leader",
			members: []Member{{ID: "a"}, {ID: "b"}},
			parts:   append(parts("t", -1, 3, 3, 4), Partition{Topic: "t", ID: 0, Leader: 4}),
			want:    map[string]string{"a": "t/1 t/2", "b": "t/0 t/3"},
		},
	))
}

func TestStickyForced(t *testing.T) {
	runTable(t, Sticky(), append(forcedCases(),
		tableCase{
			name:    "mixed subscriptions",
			members: xyMembers,
			parts:   xyParts,
			want:    map[string]string{"a": "x/0 x/1", "b": "y/0 y/1"},
		},
	))
}

// TestStickyGolden pins Sticky's output (and so its hash) for a fixed input:
// members of a group may run different builds, so the hash must never change.
func TestStickyGolden(t *testing.T) {
	if got, want := fnv1a(fnvOffset64, "a"), uint64(0xaf63dc4c8601ec8c); got != want {
		t.Fatalf("fnv1a(a) = %#x, want %#x (standard FNV-1a 64)", got, want)
	}
	if got, want := mix64(0x9e3779b97f4a7c15), uint64(0xe220a8397b1dcdaf); got != want {
		t.Fatalf("mix64(golden) = %#x (SplitMix64 first output), want %#x", got, want)
	}
	runTable(t, Sticky(), []tableCase{{
		name:    "golden",
		members: []Member{{ID: "alpha"}, {ID: "beta"}, {ID: "gamma"}},
		parts:   append(parts("orders", 1, 2, 3, 1, 2, 3, 1), parts("events", 2, 3)...),
		want: map[string]string{
			"alpha": "orders/3 orders/4 orders/5",
			"beta":  "orders/1 orders/2 orders/6",
			"gamma": "events/0 events/1 orders/0",
		},
	}})
}

func TestStickyMoreMembersThanPartitions(t *testing.T) {
	members := []Member{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}, {ID: "e"}}
	ps := parts("t", 1, 2, 3)
	a := Sticky().Assign(members, ps)
	if msg := checkAssignment(members, ps, a); msg != "" {
		t.Fatal(msg)
	}
	if s := spread(a); s != 1 {
		t.Errorf("spread = %d, want 1: %v", s, render(a))
	}
}

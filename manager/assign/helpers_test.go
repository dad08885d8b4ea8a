package assign

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// strategies lists every strategy under test with its name.
var strategies = []struct {
	name string
	fn   Strategy
}{
	{NameRange, Range()},
	{NameRoundRobin, RoundRobin()},
	{NameLeaderAware, LeaderAware()},
	{NameSticky, Sticky()},
	{NameBalanced, Balanced()},
}

// subscribed reports whether m (possibly duplicated in members) subscribes
// to topic.
func subscribed(members []Member, id, topic string) bool {
	for _, m := range members {
		if m.ID == id && (m.Topics == nil || slices.Contains(m.Topics, topic)) {
			return true
		}
	}
	return false
}

// checkAssignment returns a description of the first violated invariant of
// a as an assignment of partitions to members, or "" when a is valid:
// every member has a key and nothing else does, slices are sorted and
// non-nil, every partition comes from the input, is owned by a subscribed
// member and appears once, and every partition with at least one
// subscribed member is assigned.
func checkAssignment(members []Member, partitions []Partition, a Assignment) string {
	ids := map[string]bool{}
	for _, m := range members {
		ids[m.ID] = true
		parts, ok := a[m.ID]
		if !ok {
			return fmt.Sprintf("member %q has no key", m.ID)
		}
		if parts == nil {
			return fmt.Sprintf("member %q has a nil slice", m.ID)
		}
	}
	if len(a) != len(ids) {
		return fmt.Sprintf("assignment has %d keys, want %d", len(a), len(ids))
	}
	type key struct {
		topic string
		id    int32
	}
	input := map[key]bool{}
	for _, p := range partitions {
		input[key{p.Topic, p.ID}] = true
	}
	seen := map[key]string{}
	for id, parts := range a {
		if !slices.IsSortedFunc(parts, comparePartitions) {
			return fmt.Sprintf("member %q: partitions not sorted: %v", id, parts)
		}
		for _, p := range parts {
			k := key{p.Topic, p.ID}
			if !input[k] {
				return fmt.Sprintf("member %q got unknown partition %v", id, p)
			}
			if prev, dup := seen[k]; dup {
				return fmt.Sprintf("partition %v owned by %q and %q", p, prev, id)
			}
			seen[k] = id
			if !subscribed(members, id, p.Topic) {
				return fmt.Sprintf("member %q not subscribed to %q", id, p.Topic)
			}
		}
	}
	for k := range input {
		if _, ok := seen[k]; ok {
			continue
		}
		for id := range ids {
			if subscribed(members, id, k.topic) {
				return fmt.Sprintf("partition %v unassigned although %q subscribes", k, id)
			}
		}
	}
	return ""
}

// spread returns max-min of the partition counts in a.
func spread(a Assignment) int {
	lo, hi := -1, 0
	for _, parts := range a {
		if lo == -1 || len(parts) < lo {
			lo = len(parts)
		}
		hi = max(hi, len(parts))
	}
	return hi - max(lo, 0)
}

// randomCase builds up to maxMembers members (unique IDs) and up to
// maxParts partitions over 1-5 topics, with leaders in [-1, brokers).
// When uniform is false members get random subscriptions.
func randomCase(rng *rand.Rand, maxMembers, maxParts int, uniform bool) ([]Member, []Partition) {
	nt := 1 + rng.IntN(5)
	topics := make([]string, nt)
	for i := range topics {
		topics[i] = fmt.Sprintf("topic-%d", rng.IntN(1000))
	}
	brokers := 1 + rng.IntN(8)
	var parts []Partition
	for _, t := range topics {
		np := rng.IntN(maxParts/nt + 1)
		for id := range np {
			parts = append(parts, Partition{Topic: t, ID: int32(id), Leader: int32(rng.IntN(brokers+1) - 1)})
		}
	}
	n := 1 + rng.IntN(maxMembers)
	members := make([]Member, n)
	for i := range members {
		members[i].ID = fmt.Sprintf("member-%d-%x", i, rng.Uint32())
		if !uniform {
			switch rng.IntN(4) {
			case 0: // nil: everything
			case 1:
				members[i].Topics = []string{}
			default:
				for _, t := range topics {
					if rng.IntN(2) == 0 {
						members[i].Topics = append(members[i].Topics, t)
					}
				}
			}
		}
	}
	return members, parts
}

// shuffled returns shuffled copies of members and partitions, with some
// entries duplicated.
func shuffled(rng *rand.Rand, members []Member, parts []Partition) ([]Member, []Partition) {
	m := slices.Clone(members)
	p := slices.Clone(parts)
	if len(m) > 0 && rng.IntN(2) == 0 {
		m = append(m, m[rng.IntN(len(m))])
	}
	if len(p) > 0 && rng.IntN(2) == 0 {
		p = append(p, p[rng.IntN(len(p))])
	}
	rng.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
	rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	for i := range m {
		if m[i].Topics != nil {
			t := slices.Clone(m[i].Topics)
			rng.Shuffle(len(t), func(a, b int) { t[a], t[b] = t[b], t[a] })
			m[i].Topics = t
		}
	}
	return m, p
}

// parts builds partitions of one topic with the given leaders (index = ID).
func parts(topic string, leaders ...int32) []Partition {
	out := make([]Partition, len(leaders))
	for i, l := range leaders {
		out[i] = Partition{Topic: topic, ID: int32(i), Leader: l}
	}
	return out
}

// ids renders an assignment compactly as member -> "topic/id ..." for
// comparisons in table tests.
func render(a Assignment) map[string]string {
	out := make(map[string]string, len(a))
	for id, ps := range a {
		s := ""
		for i, p := range ps {
			if i > 0 {
				s += " "
			}
			s += fmt.Sprintf("%s/%d", p.Topic, p.ID)
		}
		out[id] = s
	}
	return out
}

func TestCheckAssignmentDetectsViolations(t *testing.T) {
	members := []Member{{ID: "a", Topics: []string{"x"}}, {ID: "b"}}
	ps := parts("x", 1, 2)
	bad := []Assignment{
		{"a": {ps[0]}},                      // b missing
		{"a": {ps[0]}, "b": nil},            // nil slice
		{"a": {ps[0], ps[1]}, "b": {ps[1]}}, // duplicate
		{"a": {ps[1], ps[0]}, "b": {}},      // unsorted
		{"a": {ps[0]}, "b": {}},             // x/1 unassigned
		{"a": {{Topic: "y"}}, "b": ps},      // unknown
		{"a": {}, "b": ps, "c": {}},         // extra key
	}
	for i, a := range bad {
		if checkAssignment(members, ps, a) == "" {
			t.Errorf("case %d: violation not detected in %v", i, a)
		}
	}
	if msg := checkAssignment(members, ps, Assignment{"a": {ps[0]}, "b": {ps[1]}}); msg != "" {
		t.Errorf("valid assignment rejected: %s", msg)
	}
}

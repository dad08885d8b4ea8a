package metadata

import (
	"maps"
	"slices"
	"testing"
)

func parts(topic string, leaders ...int32) []Partition {
	out := make([]Partition, len(leaders))
	for i, l := range leaders {
		out[i] = Partition{Topic: topic, ID: int32(i), Leader: l, Replicas: []int32{1, 2}}
	}
	return out
}

func TestDiffViews(t *testing.T) {
	base := map[string][]Partition{"a": parts("a", 1, 2), "b": nil}
	tests := []struct {
		name string
		cur  map[string][]Partition
		want change
	}{
		{"equal", map[string][]Partition{"a": parts("a", 1, 2), "b": {}}, change{}},
		{"equal", map[string][]Partition{"a": base["a"], "b": nil}, change{}},                             // a refresh keeps the list
		{"resized", map[string][]Partition{"a": base["a"][:1], "b": nil}, change{resized: []string{"a"}}}, // shares its first element
		{"added", map[string][]Partition{"a": parts("a", 1, 2), "b": nil, "c": nil}, change{added: []string{"c"}}},
		{"removed", map[string][]Partition{"a": parts("a", 1, 2)}, change{removed: []string{"b"}}},
		{"resized", map[string][]Partition{"a": parts("a", 1, 2, 3), "b": nil}, change{resized: []string{"a"}}},
		{"selected", map[string][]Partition{"a": parts("a", 1, 2), "b": parts("b", 1)}, change{resized: []string{"b"}}},
		{"leader", map[string][]Partition{"a": parts("a", 1, -1), "b": nil}, change{replicas: []string{"a"}}},
		{"replicas", map[string][]Partition{"a": {parts("a", 1)[0], {Topic: "a", ID: 1, Leader: 2, Replicas: []int32{2, 1}}}, "b": nil}, change{replicas: []string{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diffViews(base, tt.cur)
			if !slices.Equal(got.added, tt.want.added) || !slices.Equal(got.removed, tt.want.removed) ||
				!slices.Equal(got.resized, tt.want.resized) || !slices.Equal(got.replicas, tt.want.replicas) {
				t.Fatalf("diffViews = %+v, want %+v", got, tt.want)
			}
			if got.empty() != (tt.name == "equal") || EqualTopics(base, tt.cur) != got.empty() {
				t.Fatalf("empty() = %v, EqualTopics = %v", got.empty(), EqualTopics(base, tt.cur))
			}
		})
	}
}

func TestSnapshotSelected(t *testing.T) {
	s := Snapshot{Topics: map[string][]Partition{"z": parts("z", 1), "a": parts("a", 1), "n": nil}}
	if got := s.Selected(); !slices.Equal(got, []string{"a", "z"}) {
		t.Fatalf("Selected() = %v", got)
	}
}

func TestPreferredLeader(t *testing.T) {
	if got := PreferredLeader([]int32{3, 1, 2}); got != 3 {
		t.Errorf("PreferredLeader([3 1 2]) = %d", got)
	}
	if got := PreferredLeader(nil); got != -1 {
		t.Errorf("PreferredLeader(nil) = %d", got)
	}
}

// BenchmarkDiffViewsKept: a resync's view of 100 topics × 100 partitions
// that kept every topic's list, as the refresh does for unchanged topics.
func BenchmarkDiffViewsKept(b *testing.B) {
	old := map[string][]Partition{}
	for i := range 100 {
		t := string(rune('a'+i/26)) + string(rune('a'+i%26))
		old[t] = parts(t, slices.Repeat([]int32{1, 2, 3}, 34)[:100]...)
	}
	cur := maps.Clone(old)
	for b.Loop() {
		if !diffViews(old, cur).empty() {
			b.Fatal("views differ")
		}
	}
}

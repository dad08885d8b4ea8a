package manager

import (
	"maps"
	"testing"
)

// TestOwnerTable: the table gives back each partition's id, "" for a
// partition or topic it does not hold, and nothing from a nil table.
func TestOwnerTable(t *testing.T) {
	in := map[TopicPartition]string{
		{Topic: "a", Partition: 0}: "m1", {Topic: "a", Partition: 3}: "m2",
		{Topic: "b", Partition: 1}: "m1", {Topic: "b", Partition: 2}: "",
	}
	tab := newOwnerTable(maps.All(in))
	for tp, id := range in {
		if got := tab.owner(tp); got != id {
			t.Errorf("%v: %q, want %q", tp, got, id)
		}
	}
	for _, tp := range []TopicPartition{{Topic: "a", Partition: 1}, {Topic: "a", Partition: 4}, {Topic: "a", Partition: -1}, {Topic: "c", Partition: 0}} {
		if got := tab.owner(tp); got != "" {
			t.Errorf("%v: %q, want none", tp, got)
		}
	}
	if len(tab.ids) != 3 {
		t.Errorf("ids %q, want each member once and none", tab.ids)
	}
	var none *ownerTable
	if got := none.owner(TopicPartition{Topic: "a"}); got != "" {
		t.Errorf("nil table: %q", got)
	}
}

// TestOwnerTableRuns: owners yielded as an assignment yields them (each
// member's partitions by topic, topics and members repeating across runs)
// are each where they belong.
func TestOwnerTableRuns(t *testing.T) {
	type entry struct {
		tp TopicPartition
		id string
	}
	in := []entry{
		{TopicPartition{Topic: "a", Partition: 0}, "m1"}, {TopicPartition{Topic: "a", Partition: 4}, "m1"},
		{TopicPartition{Topic: "b", Partition: 5}, "m1"}, {TopicPartition{Topic: "a", Partition: 1}, "m2"},
		{TopicPartition{Topic: "b", Partition: 0}, "m2"}, {TopicPartition{Topic: "b", Partition: 7}, "m2"},
		{TopicPartition{Topic: "a", Partition: 2}, "m1"}, {TopicPartition{Topic: "c", Partition: 0}, ""},
		{TopicPartition{Topic: "", Partition: 1}, "m2"}, // not a valid name; still no panic
	}
	tab := newOwnerTable(func(yield func(TopicPartition, string) bool) {
		for _, e := range in {
			if !yield(e.tp, e.id) {
				return
			}
		}
	})
	for _, e := range in {
		if got := tab.owner(e.tp); got != e.id {
			t.Errorf("%v: %q, want %q", e.tp, got, e.id)
		}
	}
	if len(tab.topics["a"]) != 5 || len(tab.topics["b"]) != 8 || len(tab.ids) != 3 {
		t.Errorf("rows a %d, b %d, ids %q: want 5, 8 and each member once with none", len(tab.topics["a"]), len(tab.topics["b"]), tab.ids)
	}
}

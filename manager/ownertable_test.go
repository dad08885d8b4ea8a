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

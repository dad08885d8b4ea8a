package manager

import "iter"

// ownerTable maps partitions to member ids compactly: per topic, a slice
// indexed by partition of an index into ids (0: none). It holds an
// assignment's expected owner of every partition between two rebalances
// (ownersCache.expectOwners): 4 bytes a partition, where a map of
// TopicPartition to id takes about 70. Immutable once built; a nil
// *ownerTable has no owners.
type ownerTable struct {
	ids    []string // ids[0] is "" (none)
	topics map[string][]uint32
}

// newOwnerTable builds the table of owners (partition -> member id); it
// ranges over owners twice. Runs of one topic, and of one id, are looked
// up once (an assignment yields each member's partitions by topic).
func newOwnerTable(owners iter.Seq2[TopicPartition, string]) *ownerTable {
	t := &ownerTable{ids: []string{""}, topics: map[string][]uint32{}}
	size := map[string]int32{}
	var topic string
	n := int32(-1) // the current run's rows; -1 before the first run
	for tp := range owners {
		if n < 0 || tp.Topic != topic {
			if n >= 0 {
				size[topic] = max(size[topic], n)
			}
			topic, n = tp.Topic, size[tp.Topic]
		}
		n = max(n, tp.Partition+1)
	}
	if n >= 0 {
		size[topic] = max(size[topic], n)
	}
	for topic, n := range size {
		t.topics[topic] = make([]uint32, n)
	}
	index := map[string]uint32{"": 0}
	var row []uint32
	inRun := false
	id, i := "", uint32(0) // "" is index 0
	for tp, owner := range owners {
		if owner != id {
			x, ok := index[owner]
			if !ok {
				x = uint32(len(t.ids))
				index[owner] = x
				t.ids = append(t.ids, owner)
			}
			id, i = owner, x
		}
		if !inRun || tp.Topic != topic {
			topic, row, inRun = tp.Topic, t.topics[tp.Topic], true
		}
		row[tp.Partition] = i
	}
	return t
}

// owner returns tp's member id ("" none).
func (t *ownerTable) owner(tp TopicPartition) string {
	if t == nil {
		return ""
	}
	ps := t.topics[tp.Topic]
	if tp.Partition < 0 || int(tp.Partition) >= len(ps) {
		return ""
	}
	return t.ids[ps[tp.Partition]]
}

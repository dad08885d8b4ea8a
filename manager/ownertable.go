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
// ranges over owners twice.
func newOwnerTable(owners iter.Seq2[TopicPartition, string]) *ownerTable {
	t := &ownerTable{ids: []string{""}, topics: map[string][]uint32{}}
	size := map[string]int32{}
	for tp := range owners {
		size[tp.Topic] = max(size[tp.Topic], tp.Partition+1)
	}
	for topic, n := range size {
		t.topics[topic] = make([]uint32, n)
	}
	index := map[string]uint32{"": 0}
	for tp, id := range owners {
		i, ok := index[id]
		if !ok {
			i = uint32(len(t.ids))
			index[id] = i
			t.ids = append(t.ids, id)
		}
		t.topics[tp.Topic][tp.Partition] = i
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

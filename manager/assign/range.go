package assign

// Range returns the strategy that assigns partitions with the semantics of
// Kafka's RangeAssignor. Each topic is handled on its own: its eligible
// members are sorted by ID, its partitions by ID, and the partitions are cut
// into contiguous ranges, one per member in order; with P partitions and N
// eligible members every member gets P/N partitions and the first P mod N
// members get one more. Counts are therefore balanced to within one per
// topic, but not necessarily overall.
//
// The Strategy Range returns is pure, never blocks and is safe for
// concurrent use; its Name is NameRange.
func Range() Strategy { return viewStrategy(NameRange, assignRange) }

// assignRange computes Range's assignment of v into out.
func assignRange(v *view, out Assignment) {
	for _, topic := range v.topics {
		elig := v.eligible[topic]
		if len(elig) == 0 {
			continue
		}
		parts := v.topicParts(topic)
		n := len(elig)
		per, extra := len(parts)/n, len(parts)%n
		next := 0
		for i, id := range elig {
			count := per
			if i < extra {
				count++
			}
			out[id] = append(out[id], parts[next:next+count]...)
			next += count
		}
	}
}

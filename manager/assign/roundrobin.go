package assign

// RoundRobin returns the strategy that assigns partitions with the semantics
// of Kafka's RoundRobinAssignor. All partitions are sorted by (Topic, ID)
// and dealt in turn to the members sorted by ID: a cursor walks the member
// ring, skips members not subscribed to the partition's topic, hands the
// partition to the first subscribed member and then moves one past it.
// Partitions of topics nobody subscribes to are left out. When every member
// subscribes to every topic the counts are balanced to within one overall.
//
// The Strategy RoundRobin returns is pure, never blocks and is safe for
// concurrent use; its Name is NameRoundRobin.
func RoundRobin() Strategy { return viewStrategy(NameRoundRobin, assignRoundRobin) }

// assignRoundRobin computes RoundRobin's assignment of v into out.
func assignRoundRobin(v *view, out Assignment) {
	n := len(v.members)
	if n == 0 {
		return
	}
	subscribed := make(map[string]map[string]bool, len(v.topics))
	for _, topic := range v.topics {
		set := make(map[string]bool, len(v.eligible[topic]))
		for _, id := range v.eligible[topic] {
			set[id] = true
		}
		subscribed[topic] = set
	}
	cursor := 0
	for _, p := range v.parts {
		set := subscribed[p.Topic]
		if len(set) == 0 {
			continue
		}
		// At least one member is subscribed, so this loop ends within n steps.
		for !set[v.members[cursor]] {
			cursor = (cursor + 1) % n
		}
		id := v.members[cursor]
		out[id] = append(out[id], p)
		cursor = (cursor + 1) % n
	}
}

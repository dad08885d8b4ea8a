package assign

import (
	"cmp"
	"slices"
	"strings"
)

// view is the canonical form of a strategy's input: de-duplicated, sorted
// and independent of the order of the caller's slices.
type view struct {
	// members holds the distinct member IDs in ascending order.
	members []string
	// parts holds the distinct partitions sorted by (Topic, ID), with
	// negative leaders normalised to -1 and Owner cleared.
	parts []Partition
	// owners is index-aligned with parts: the partition's Owner when that
	// is a member subscribed to its topic, "" otherwise.
	owners []string
	// topics holds the distinct topics of parts in ascending order.
	topics []string
	// eligible maps each topic of parts to the ascending IDs of the members
	// subscribed to it. Topics nobody subscribes to map to nil.
	eligible map[string][]string
	// uniform is true when every member is eligible for every topic.
	uniform bool
}

// normalize builds the canonical view of the input.
//
// Duplicate members (same ID) are merged: the merged member subscribes to the
// union of their topics, and to everything if any of them has nil Topics.
// Duplicate partitions (same Topic and ID) are merged keeping the highest
// Leader, so a known leader wins over -1, and the smallest of their valid
// owners. The caller's slices are not modified.
func normalize(members []Member, partitions []Partition) *view {
	v := &view{eligible: make(map[string][]string)}
	subs := v.mergeMembers(members)
	v.mergePartitions(partitions, subs)
	v.fillEligible(subs)
	return v
}

// mergeMembers sets v.members (sorted, each once) and returns each
// member's topics: subs[id] == nil means "subscribes to every topic".
func (v *view) mergeMembers(members []Member) map[string]map[string]bool {
	subs := make(map[string]map[string]bool, len(members))
	all := make(map[string]bool, len(members))
	for _, m := range members {
		if all[m.ID] {
			continue
		}
		if m.Topics == nil {
			all[m.ID] = true
			subs[m.ID] = nil
			continue
		}
		set, ok := subs[m.ID]
		if !ok {
			set = make(map[string]bool, len(m.Topics))
			subs[m.ID] = set
		}
		for _, t := range m.Topics {
			set[t] = true
		}
	}
	v.members = make([]string, 0, len(subs))
	for id := range subs {
		v.members = append(v.members, id)
	}
	slices.Sort(v.members)
	return subs
}

// partKey orders partitions by (Topic, ID) with one integer comparison:
// tp packs the topic's rank in the high half and the ID, its sign bit
// flipped, in the low. at indexes the caller's partitions.
type partKey struct {
	tp uint64
	at int
}

// sortedKeys sets v.topics (sorted, each once) and returns the
// partitions' keys in (Topic, ID) order, duplicates side by side.
func (v *view) sortedKeys(partitions []Partition) []partKey {
	rank := make(map[string]int32)
	for _, p := range partitions {
		if _, ok := rank[p.Topic]; !ok {
			rank[p.Topic] = 0
			v.topics = append(v.topics, p.Topic)
		}
	}
	slices.Sort(v.topics)
	for r, t := range v.topics {
		rank[t] = int32(r)
	}
	keys := make([]partKey, len(partitions))
	sorted := true // as zkgroup's members pass them
	for i, p := range partitions {
		keys[i] = partKey{uint64(rank[p.Topic])<<32 | uint64(uint32(p.ID)^1<<31), i}
		sorted = sorted && (i == 0 || keys[i-1].tp <= keys[i].tp)
	}
	if !sorted {
		slices.SortFunc(keys, func(a, b partKey) int { return cmp.Compare(a.tp, b.tp) })
	}
	return keys
}

// mergePartitions sets v.topics, v.parts and v.owners: one entry per
// (Topic, ID), the highest Leader of its duplicates and the smallest of
// their owners that is a member subscribed to the topic.
func (v *view) mergePartitions(partitions []Partition, subs map[string]map[string]bool) {
	keys := v.sortedKeys(partitions)
	valid := func(owner, topic string) bool {
		set, ok := subs[owner]
		return owner != "" && ok && (set == nil || set[topic])
	}
	v.parts = make([]Partition, 0, len(keys))
	v.owners = make([]string, 0, len(keys))
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j].tp == keys[i].tp {
			j++
		}
		topic := v.topics[keys[i].tp>>32]
		leader, owner := int32(-1), ""
		for _, k := range keys[i:j] {
			p := partitions[k.at]
			leader = max(leader, p.Leader)
			if valid(p.Owner, topic) && (owner == "" || p.Owner < owner) {
				owner = p.Owner
			}
		}
		id := int32(uint32(keys[i].tp) ^ 1<<31)
		v.parts = append(v.parts, Partition{Topic: topic, ID: id, Leader: leader})
		v.owners = append(v.owners, owner)
		i = j
	}
}

// fillEligible sets v.eligible (each topic's subscribed members, sorted)
// and v.uniform. A topic every member subscribes to shares v.members.
func (v *view) fillEligible(subs map[string]map[string]bool) {
	v.uniform = true
	for _, topic := range v.topics {
		n := 0
		for _, id := range v.members {
			if set := subs[id]; set == nil || set[topic] {
				n++
			}
		}
		switch {
		case n == 0:
			v.eligible[topic] = nil
		case n == len(v.members):
			v.eligible[topic] = v.members
		default:
			elig := make([]string, 0, n)
			for _, id := range v.members {
				if set := subs[id]; set == nil || set[topic] {
					elig = append(elig, id)
				}
			}
			v.eligible[topic] = elig
		}
		v.uniform = v.uniform && n == len(v.members)
	}
}

// newAssignment returns an Assignment with an empty slice for every member.
func (v *view) newAssignment() Assignment {
	a := make(Assignment, len(v.members))
	for _, id := range v.members {
		a[id] = []Partition{}
	}
	return a
}

// eligibleParts returns the partitions of v that at least one member
// subscribes to, in (Topic, ID) order.
func (v *view) eligibleParts() []Partition {
	out := make([]Partition, 0, len(v.parts))
	for _, p := range v.parts {
		if len(v.eligible[p.Topic]) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// topicParts returns the sub-slice of v.parts that belongs to topic.
func (v *view) topicParts(topic string) []Partition {
	lo, hi := v.topicRange(topic)
	return v.parts[lo:hi]
}

// topicRange returns the bounds [lo, hi) of topic's partitions in v.parts
// (and v.owners).
func (v *view) topicRange(topic string) (lo, hi int) {
	lo, _ = slices.BinarySearchFunc(v.parts, topic, func(p Partition, t string) int {
		return strings.Compare(p.Topic, t)
	})
	hi = lo
	for hi < len(v.parts) && v.parts[hi].Topic == topic {
		hi++
	}
	return lo, hi
}

// sortAll sorts every member's partitions by (Topic, ID).
func (a Assignment) sortAll() Assignment {
	for _, parts := range a {
		slices.SortFunc(parts, comparePartitions)
	}
	return a
}

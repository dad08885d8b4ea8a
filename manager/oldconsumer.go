package manager

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf16"

	"github.com/zkgroup/zkgroup/manager/assign"
	"github.com/zkgroup/zkgroup/subscription"
)

// IncompatibleMemberError reports a member of the group that publishes no
// assignment strategy, as Kafka's old high-level consumer
// (ZookeeperConsumerConnector) and the Go consumers on its layout do, when
// the assignment the old consumer computes over the group (its range or
// roundrobin, over its consumer thread ids <consumerId>-<n>) differs from
// the one this member computes: a partition one side holds is the
// other's to claim, so claims wait on each other and some partitions may
// go unconsumed until the members agree. The members agree when every
// old consumer runs one stream per topic, the group computes range or
// roundrobin as the old consumers are configured (roundrobin only where
// the old consumer's partition order matches, and with one subscription
// for all), and no member id is a prefix of another (see the README's
// section on moving off the old consumers). It is reported on Errors()
// once per peer and reason while it lasts, and listed in
// Stats.IncompatibleMembers. It unwraps to ErrIncompatibleMember. A plain
// value.
type IncompatibleMemberError struct {
	// Member is this member's id and Strategy the name of the strategy
	// the group computes with.
	Member, Strategy string
	// Peer is the member publishing no strategy.
	Peer string
	// Reason says why the assignments differ, in words.
	Reason string
	// Differ counts the partitions the two assignments give to different
	// members; Partitions lists the first of them (at most 10, sorted).
	Differ     int
	Partitions []TopicPartition
}

// Error names both members, the reason and the partitions.
func (e *IncompatibleMemberError) Error() string {
	ps := make([]string, len(e.Partitions))
	for i, tp := range e.Partitions {
		ps[i] = fmt.Sprintf("%s/%d", tp.Topic, tp.Partition)
	}
	more := ""
	if e.Differ > len(e.Partitions) {
		more = fmt.Sprintf(" and %d more", e.Differ-len(e.Partitions))
	}
	return fmt.Sprintf("%v: member %q publishes no strategy (Kafka's old high-level consumer?) and would not agree with %q computed by member %q on %d partitions (%s%s): %s",
		ErrIncompatibleMember, e.Peer, e.Strategy, e.Member, e.Differ, strings.Join(ps, ", "), more, e.Reason)
}

// Unwrap returns ErrIncompatibleMember.
func (e *IncompatibleMemberError) Unwrap() error { return ErrIncompatibleMember }

// oldConsumerConflicts compares the assignment the group computes with
// (use, over members and parts, topics being every known topic) with what
// Kafka's old high-level consumer computes, range and roundrobin, and
// returns one error per member publishing no strategy when neither
// agrees (none when no member publishes none). Pure.
func oldConsumerConflicts(self string, use assign.Strategy, members []member, exclude map[string]bool,
	topics []string, parts []assign.Partition) []IncompatibleMemberError {
	if use == nil || !slices.ContainsFunc(members, func(m member) bool { return m.strategy == "" && m.sub != nil }) {
		return nil
	}
	a := use.Assign(assignMembers(withoutExcluded(members, exclude), topics), parts)
	ours := map[TopicPartition]string{}
	for id, ps := range a {
		for _, p := range ps {
			ours[TopicPartition{Topic: p.Topic, Partition: p.ID}] = id
		}
	}
	// The old consumers do not say which strategy they use: the members
	// agree when either one gives what the group computes.
	primary, other := assign.NameRange, assign.NameRoundRobin
	if use.Name() == assign.NameRoundRobin {
		primary, other = other, primary
	}
	differ := diffOwners(ours, oldConsumerAssign(primary, members, topics, parts), parts)
	if len(differ) == 0 || len(diffOwners(ours, oldConsumerAssign(other, members, topics, parts), parts)) == 0 {
		return nil
	}
	var out []IncompatibleMemberError
	for _, m := range members {
		if m.strategy != "" || m.sub == nil {
			continue
		}
		out = append(out, IncompatibleMemberError{Member: self, Strategy: use.Name(), Peer: m.id,
			Reason: oldConsumerReason(use.Name(), m, members, topics, parts),
			Differ: len(differ), Partitions: differ[:min(10, len(differ))]})
	}
	return out
}

// diffOwners lists, sorted, the partitions whose owners differ.
func diffOwners(a, b map[TopicPartition]string, parts []assign.Partition) []TopicPartition {
	differ := map[TopicPartition]bool{}
	for _, p := range parts {
		tp := TopicPartition{Topic: p.Topic, Partition: p.ID}
		if a[tp] != b[tp] {
			differ[tp] = true
		}
	}
	if len(differ) == 0 {
		return nil
	}
	return sortedTPs(differ)
}

// oldThreads returns the consumer thread ids the old consumer gives
// member m for topic: <id>-0 to <id>-<n-1> for its stream count n.
func oldThreads(m member, topic string) []string {
	n := streamCount(m, topic)
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", m.id, i)
	}
	return out
}

// streamCount is the number of streams m registers for topic (0 when it
// does not subscribe to it).
func streamCount(m member, topic string) int {
	if m.sub == nil || !m.sub.Match(topic) {
		return 0
	}
	if m.sub.Pattern() == subscription.StaticPattern {
		if n, ok := m.streams[topic]; ok {
			return n
		}
		return 1
	}
	for _, n := range m.streams {
		return n // a wildcard registration has one expression
	}
	return 1
}

// oldConsumerAssign computes the owner of each partition as Kafka's old
// high-level consumer does with partition.assignment.strategy name
// (range or roundrobin) over the members' thread ids, sorted as strings.
// Range: per topic, the partitions are cut into contiguous runs, one per
// thread subscribed, the first (partitions mod threads) one longer.
// Roundrobin: every partition of a subscribed topic, in the order of the
// Java hash code of "[topic,partition]", goes to the threads in turn,
// subscribed or not. Pure.
func oldConsumerAssign(name string, members []member, topics []string, parts []assign.Partition) map[TopicPartition]string {
	byTopic := map[string][]int32{}
	for _, p := range parts {
		byTopic[p.Topic] = append(byTopic[p.Topic], p.ID)
	}
	threadsFor := func(topic string) []string {
		var ts []string
		for _, m := range members {
			ts = append(ts, oldThreads(m, topic)...)
		}
		sort.Strings(ts)
		return ts
	}
	owner := map[string]string{} // thread id -> member id
	for _, m := range members {
		for _, t := range topics {
			for _, th := range oldThreads(m, t) {
				owner[th] = m.id
			}
		}
	}
	switch name {
	case assign.NameRange:
		return oldRange(byTopic, threadsFor, owner)
	case assign.NameRoundRobin:
		return oldRoundRobin(byTopic, threadsFor, owner)
	}
	return map[TopicPartition]string{}
}

// oldRange is oldConsumerAssign's range: per topic, the partitions in
// contiguous runs over the topic's threads. owner maps threads to members.
func oldRange(byTopic map[string][]int32, threadsFor func(string) []string, owner map[string]string) map[TopicPartition]string {
	out := map[TopicPartition]string{}
	for topic, ids := range byTopic {
		ts := threadsFor(topic)
		if len(ts) == 0 {
			continue
		}
		slices.Sort(ids)
		per, extra := len(ids)/len(ts), len(ids)%len(ts)
		next := 0
		for i, th := range ts {
			k := per
			if i < extra {
				k++
			}
			for _, id := range ids[next : next+k] {
				out[TopicPartition{Topic: topic, Partition: id}] = owner[th]
			}
			next += k
		}
	}
	return out
}

// oldRoundRobin is oldConsumerAssign's roundrobin: every partition of a
// topic some thread subscribes to, by Java hash, to every thread in turn.
func oldRoundRobin(byTopic map[string][]int32, threadsFor func(string) []string, owner map[string]string) map[TopicPartition]string {
	out := map[TopicPartition]string{}
	set := map[string]bool{}
	var all []TopicPartition
	for topic, ids := range byTopic {
		ts := threadsFor(topic)
		if len(ts) == 0 {
			continue
		}
		for _, th := range ts {
			set[th] = true
		}
		for _, id := range ids {
			all = append(all, TopicPartition{Topic: topic, Partition: id})
		}
	}
	ts := make([]string, 0, len(set))
	for th := range set {
		ts = append(ts, th)
	}
	sort.Strings(ts)
	sort.Slice(all, func(i, j int) bool { return tpLess(all[i], all[j]) })
	sort.SliceStable(all, func(i, j int) bool { return javaHash(all[i]) < javaHash(all[j]) })
	for i, tp := range all {
		out[tp] = owner[ts[i%len(ts)]]
	}
	return out
}

func tpLess(a, b TopicPartition) bool {
	if a.Topic != b.Topic {
		return a.Topic < b.Topic
	}
	return a.Partition < b.Partition
}

// javaHash is Java's String.hashCode of "[topic,partition]", the old
// roundrobin's sort key.
func javaHash(tp TopicPartition) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(fmt.Sprintf("[%s,%d]", tp.Topic, tp.Partition))) {
		h = 31*h + int32(u)
	}
	return h
}

// oldConsumerReason says why peer's old-consumer assignment differs from
// what the group computes with strategy: the first cause found. Pure.
func oldConsumerReason(strategy string, peer member, members []member, topics []string, parts []assign.Partition) string {
	for _, t := range peer.sub.Filter(topics) {
		if n := streamCount(peer, t); n > 1 {
			return fmt.Sprintf("it registers %d streams (consumer threads) for topic %q; the old consumer counts one consumer per thread, zkgroup one per member: run it with one stream", n, t)
		}
	}
	if strategy != assign.NameRange && strategy != assign.NameRoundRobin {
		return fmt.Sprintf("the old consumer computes range or roundrobin (its partition.assignment.strategy), the group %q: configure the zkgroup members with the old consumer's", strategy)
	}
	ids := make([]string, 0, len(members))
	threads := make([]string, 0, len(members))
	for _, m := range members {
		ids = append(ids, m.id)
		threads = append(threads, m.id+"-0")
	}
	sort.Strings(ids)
	sort.Strings(threads)
	for i := range ids {
		if ids[i]+"-0" != threads[i] {
			return "member ids sort in another order than the old consumer's thread ids (<id>-0): an id is a prefix of another; leave InstanceID empty (ids in the old consumer's shape)"
		}
	}
	if strategy == assign.NameRoundRobin {
		var tps []TopicPartition
		for _, p := range parts {
			tps = append(tps, TopicPartition{Topic: p.Topic, Partition: p.ID})
		}
		sort.Slice(tps, func(i, j int) bool { return tpLess(tps[i], tps[j]) })
		if !slices.IsSortedFunc(tps, func(a, b TopicPartition) int { return cmp.Compare(javaHash(a), javaHash(b)) }) {
			return "the old roundrobin deals the partitions in the order of the Java hash codes of \"[topic,partition]\", zkgroup in (topic, partition) order, and here they differ (topics of 10 or more partitions, or several topics): use range"
		}
		return "the old roundrobin deals every partition to every consumer thread in turn whatever it subscribes to, zkgroup only to members subscribed: give every member the same subscription, or use range"
	}
	return "the old consumer would assign differently"
}

// noteOldConsumersLocked reports each member publishing no strategy whose
// assignment would differ (see IncompatibleMemberError) on Errors() and
// in the log once per peer and reason while it lasts, and keeps what
// Stats shows. c.mu must be held.
func (c *Consumer) noteOldConsumersLocked(pl *plan) {
	topics := make([]string, 0, len(pl.snap.Topics))
	for t := range pl.snap.Topics {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	c.oldConflicts = oldConsumerConflicts(c.id, pl.strategy.use, pl.members, pl.strategy.exclude, topics, pl.parts)
	now := map[string]string{}
	for _, e := range c.oldConflicts {
		now[e.Peer] = e.Reason
	}
	for id := range c.oldPeers {
		if _, ok := now[id]; !ok {
			delete(c.oldPeers, id)
			c.log.Info("member publishing no strategy agrees again, or left", "peer", id)
		}
	}
	for i := range c.oldConflicts {
		e := c.oldConflicts[i]
		if c.oldPeers[e.Peer] == e.Reason {
			continue
		}
		if c.oldPeers == nil {
			c.oldPeers = map[string]string{}
		}
		c.oldPeers[e.Peer] = e.Reason
		c.log.Warn("a member publishing no strategy would compute another assignment", "error", &e)
		c.report(&e)
	}
}

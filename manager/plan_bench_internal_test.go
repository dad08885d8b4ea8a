package manager

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"

	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/manager/assign"
	"github.com/zkgroup/zkgroup/subscription"
)

// planCase is the work of one member's rebalance after a join, without
// its ZooKeeper reads: topics × per partitions led by 3 brokers, members
// registered, the group's assignment node as the writer stored it for
// the members but the last. The plan is the one a follower computes
// (the node fresh, its digest the old membership's).
func planCase(tb testing.TB, topics, per, members int) (*Consumer, *plan, []string) {
	tb.Helper()
	snap := metadata.Snapshot{Topics: map[string][]metadata.Partition{}}
	var names []string
	for t := range topics {
		name := fmt.Sprintf("bench-scale-10000-t%03d", t)
		names = append(names, name)
		ps := make([]metadata.Partition, per)
		for p := range ps {
			ps[p] = metadata.Partition{Topic: name, ID: int32(p), Leader: int32((t*per + p) % 3)}
		}
		snap.Topics[name] = ps
	}
	slices.Sort(names)
	sub, err := subscription.Static(names...)
	if err != nil {
		tb.Fatal(err)
	}
	ms := make([]member, members)
	for i := range ms {
		ms[i] = member{id: fmt.Sprintf("bench-scale-zkgroup-0_vm-%04d-%08x", i, i*7919), sub: sub, strategy: assign.NameBalanced, czxid: int64(100 + i)}
	}
	c := &Consumer{id: ms[members/2].id, strategy: assign.Balanced()}
	// The node the writer stored for every member but the last.
	prev := &plan{members: ms[:members-1], snap: snap, withParts: names}
	prev.fillParts()
	c.assignPlan(prev, names)
	data, err := storedData(prev.digest, prev.inputIDs, prev.parts, prev.assignment)
	if err != nil {
		tb.Fatal(err)
	}
	st := storedAssignment{raw: data, exists: true, sum: sha256.Sum256(data)}
	st.parse("assignment")
	if st.err != nil {
		tb.Fatal(st.err)
	}
	return c, &plan{members: ms, snap: snap, withParts: names, stored: st, fromStored: true}, names
}

// BenchmarkPlan: a member's rebalance after a join at 10,000 partitions
// (100 topics) and 50 members, the CPU of which every member spends at
// once: the partitions with their stored owners, the assignment, and the
// assignment node's bytes and sum (rebalance, for storedUnchanged).
func BenchmarkPlan(b *testing.B) {
	c, base, names := planCase(b, 100, 100, 50)
	b.ReportAllocs()
	for b.Loop() {
		pl := *base
		pl.fillParts()
		c.assignPlan(&pl, names)
		data, err := storedData(pl.digest, pl.inputIDs, pl.parts, pl.assignment)
		if err != nil {
			b.Fatal(err)
		}
		_ = sha256.Sum256(data)
		if len(pl.mine) == 0 || pl.asStored {
			b.Fatalf("computed %d partitions, as stored %v", len(pl.mine), pl.asStored)
		}
	}
}

// TestPlanCase: BenchmarkPlan's follower, at a small size, computes the
// new membership's assignment (the node's digest is the old one's), which
// gives the new member its share, and the bytes it would store differ from
// the node's.
func TestPlanCase(t *testing.T) {
	c, base, names := planCase(t, 4, 10, 5)
	pl := *base
	pl.fillParts()
	c.assignPlan(&pl, names)
	if pl.asStored || pl.digest == pl.stored.a.Digest {
		t.Fatalf("the plan followed the node (as stored %v, digest %s)", pl.asStored, pl.digest)
	}
	last := base.members[len(base.members)-1].id
	if n := len(pl.assignment[last]); n != 8 {
		t.Errorf("the new member got %d of 40 partitions, want 8", n)
	}
	data, err := storedData(pl.digest, pl.inputIDs, pl.parts, pl.assignment)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(data) == pl.stored.sum {
		t.Error("the new assignment's bytes are the node's")
	}
}

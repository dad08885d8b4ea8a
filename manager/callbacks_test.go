package manager_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// cbCall is one rebalance callback call as seen by the embedder.
type cbCall struct {
	member     string
	kind       string // "assigned", "revoked", "lost"
	parts      map[string][]int32
	start, end uint64 // on the log's clock: every start and end ticks it
	ctxErr     error  // ctx.Err() at the start of the call
	consumer   *manager.Consumer
}

// cbLog records the callbacks of several members on one clock, and
// flags calls of one member that overlap.
type cbLog struct {
	clock    atomic.Uint64
	mu       sync.Mutex
	calls    []cbCall
	inflight map[string]*atomic.Int32
	overlaps []string
	hold     time.Duration // how long OnRevoked takes
}

func newCBLog(hold time.Duration) *cbLog {
	return &cbLog{inflight: map[string]*atomic.Int32{}, hold: hold}
}

// wire sets cfg's callbacks to record member's calls.
func (l *cbLog) wire(member string, cfg *manager.Config) {
	l.mu.Lock()
	in := &atomic.Int32{}
	l.inflight[member] = in
	l.mu.Unlock()
	record := func(kind string, hold time.Duration) func(context.Context, *manager.Consumer, map[string][]int32) {
		return func(ctx context.Context, c *manager.Consumer, parts map[string][]int32) {
			if n := in.Add(1); n > 1 {
				l.mu.Lock()
				l.overlaps = append(l.overlaps, fmt.Sprintf("%s: %s called while %d other call(s) ran", member, kind, n-1))
				l.mu.Unlock()
			}
			call := cbCall{member: member, kind: kind, parts: parts, start: l.clock.Add(1), consumer: c}
			if ctx == nil {
				call.ctxErr = fmt.Errorf("nil ctx")
			} else {
				call.ctxErr = ctx.Err()
			}
			time.Sleep(hold) // the embedder's work (a slow callback), not a synchronisation
			in.Add(-1)
			call.end = l.clock.Add(1)
			l.mu.Lock()
			l.calls = append(l.calls, call)
			l.mu.Unlock()
		}
	}
	cfg.OnAssigned = record("assigned", 0)
	cfg.OnRevoked = record("revoked", l.hold)
	cfg.OnLost = record("lost", 0)
}

// of returns member's calls so far, in order.
func (l *cbLog) of(member string) []cbCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []cbCall
	for _, c := range l.calls {
		if c.member == member {
			out = append(out, c)
		}
	}
	return out
}

func kinds(calls []cbCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.kind
	}
	return out
}

// partSet lists the partitions of topic in a callback's map, sorted,
// failing on any other topic.
func partSet(t *testing.T, topic string, c cbCall) []int32 {
	t.Helper()
	for tp := range c.parts {
		if tp != topic {
			t.Errorf("%s's %s names topic %q", c.member, c.kind, tp)
		}
	}
	ps := c.parts[topic]
	if !slices.IsSorted(ps) {
		t.Errorf("%s's %s: partitions %v not sorted", c.member, c.kind, ps)
	}
	return ps
}

func complement(n int32, ps []int32) []int32 {
	var out []int32
	for p := range n {
		if !slices.Contains(ps, p) {
			out = append(out, p)
		}
	}
	return out
}

// TestRebalanceCallbacks: a join, a session loss and a leave, with
// OnRevoked taking 300 ms. Each event makes exactly one call per member it
// concerns, with every partition that moved (the join: the partitions a
// revokes are those b is assigned; the loss: b loses all it held, a is
// assigned those; the leave (Close): a revokes all it held and b is
// assigned those); calls of one member never overlap; each gets the
// consumer and a context, canceled only for Close's OnRevoked; and a
// partition's next owner is told of it (OnAssigned begins) only after
// its previous owner's OnRevoked returned.
func TestRebalanceCallbacks(t *testing.T) {
	c := testcluster.Shared(t)
	const parts = 6
	topic, group, sub := newTopic(t, c, parts)
	rec := newRecorder(t)
	cb := newCBLog(300 * time.Millisecond)
	p := testcluster.ZooKeeperProxy(t, c)
	opts := func(name, zk string) joinOpts {
		return joinOpts{zk: zk, configure: func(cfg *manager.Config) { cb.wire(name, cfg) }}
	}
	expect := func(member string, want ...string) []cbCall {
		t.Helper()
		var got []cbCall
		await(t, 30*time.Second, fmt.Sprintf("%s's calls %v", member, want), func() bool {
			got = cb.of(member)
			return len(got) >= len(want)
		})
		if !slices.Equal(kinds(got), want) {
			t.Fatalf("%s's calls: %v, want %v", member, kinds(got), want)
		}
		return got
	}
	all := complement(parts, nil)

	// a alone: one OnAssigned with every partition.
	a := join(t, c, group, sub, "a", rec, opts("a", ""))
	await(t, 30*time.Second, "a owning all", func() bool { return balanced(parts, a) })
	ca := expect("a", "assigned")
	if got := partSet(t, topic, ca[0]); !slices.Equal(got, all) {
		t.Errorf("a's first OnAssigned: %v, want %v", got, all)
	}

	// b joins: a revokes what b is assigned, in one call each, and b hears
	// of them after a's OnRevoked returned.
	b := join(t, c, group, sub, "b", rec, opts("b", p.Addr()+c.Chroot()))
	await(t, 30*time.Second, "a, b balanced", func() bool { return balanced(parts, a, b) })
	ca = expect("a", "assigned", "revoked")
	cbb := expect("b", "assigned")
	moved := partSet(t, topic, ca[1])
	if got := partSet(t, topic, cbb[0]); !slices.Equal(got, moved) || len(moved) != parts/2 {
		t.Errorf("join: a revoked %v, b was assigned %v; want the same %d", moved, got, parts/2)
	}
	if cbb[0].start < ca[1].end {
		t.Errorf("join: b's OnAssigned began (tick %d) before a's OnRevoked returned (tick %d)", cbb[0].start, ca[1].end)
	}
	held := moved // b's

	// b's session expires (its ZooKeeper connection refused for longer
	// than the session timeout): a is assigned what b held; once b reaches
	// ZooKeeper again it is told it lost all of it in one OnLost, then the
	// group balances again (a revokes, b is assigned).
	p.Block()
	ca = expect("a", "assigned", "revoked", "assigned")
	if got := partSet(t, topic, ca[2]); !slices.Equal(got, held) {
		t.Errorf("loss: a was assigned %v after b's session expired, want b's %v", got, held)
	}
	p.Unblock()
	await(t, 60*time.Second, "a, b balanced again", func() bool { return balanced(parts, a, b) })
	cbb = expect("b", "assigned", "lost", "assigned")
	if got := partSet(t, topic, cbb[1]); !slices.Equal(got, held) {
		t.Errorf("loss: b's OnLost: %v, want all it held: %v", got, held)
	}
	ca = expect("a", "assigned", "revoked", "assigned", "revoked")
	moved = partSet(t, topic, ca[3])
	if got := partSet(t, topic, cbb[2]); !slices.Equal(got, moved) || len(moved) != parts/2 {
		t.Errorf("rejoin: a revoked %v, b was assigned %v; want the same %d", moved, got, parts/2)
	}
	if cbb[2].start < ca[3].end {
		t.Errorf("rejoin: b's OnAssigned began (tick %d) before a's OnRevoked returned (tick %d)", cbb[2].start, ca[3].end)
	}

	// a leaves (Close): one OnRevoked with all it held, its ctx canceled;
	// b is assigned those after it returned.
	aHeld := complement(parts, moved)
	a.close(t)
	ca = expect("a", "assigned", "revoked", "assigned", "revoked", "revoked")
	if got := partSet(t, topic, ca[4]); !slices.Equal(got, aHeld) {
		t.Errorf("leave: a's OnRevoked: %v, want all it held: %v", got, aHeld)
	}
	if ca[4].ctxErr == nil {
		t.Errorf("leave: the ctx of Close's OnRevoked is not canceled")
	}
	await(t, 30*time.Second, "b owning all", func() bool { return balanced(parts, b) })
	cbb = expect("b", "assigned", "lost", "assigned", "assigned")
	if got := partSet(t, topic, cbb[3]); !slices.Equal(got, aHeld) {
		t.Errorf("leave: b was assigned %v, want a's %v", got, aHeld)
	}
	if cbb[3].start < ca[4].end {
		t.Errorf("leave: b's OnAssigned began (tick %d) before a's OnRevoked returned (tick %d)", cbb[3].start, ca[4].end)
	}
	b.close(t)
	cbb = expect("b", "assigned", "lost", "assigned", "assigned", "revoked")
	if got := partSet(t, topic, cbb[4]); !slices.Equal(got, all) {
		t.Errorf("b's Close: OnRevoked %v, want %v", got, all)
	}

	cb.mu.Lock()
	defer cb.mu.Unlock()
	for _, o := range cb.overlaps {
		t.Errorf("overlap: %s", o)
	}
	for _, call := range cb.calls {
		in := map[string]*manager.Consumer{"a": a.c, "b": b.c}[call.member]
		if call.consumer != in {
			t.Errorf("%s's %s got another consumer", call.member, call.kind)
		}
		closing := call.member == "a" && call.start >= ca[4].start || call.member == "b" && call.start >= cbb[4].start
		if call.ctxErr != nil && !closing {
			t.Errorf("%s's %s (tick %d): ctx %v while not closing", call.member, call.kind, call.start, call.ctxErr)
		}
	}
}

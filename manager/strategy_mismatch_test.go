package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/manager/assign"
	"github.com/zkgroup/zkgroup/subscription"
)

// mismatchMember is a member that acks everything it receives, records each
// delivery in a ledger and keeps every error it reports.
type mismatchMember struct {
	*instance
	once sync.Once
	mu   sync.Mutex
	errs []error
}

func joinWithStrategy(t *testing.T, c *testcluster.Cluster, group string, sub *subscription.Subscription, name string,
	s assign.Strategy, led *testcluster.Ledger) *mismatchMember {
	t.Helper()
	cfg := baseConfig(t, name)
	cfg.Strategy = s
	m := &mismatchMember{}
	m.instance = joinInstance(t, c.ZooKeeperConnect(), group, sub, name, cfg, func(err error) {
		m.mu.Lock()
		m.errs = append(m.errs, err)
		m.mu.Unlock()
	})
	m.wg.Go(func() {
		forEach(t, name+": Each", m.c.Each(context.Background()), func(msg *manager.Message) {
			led.Add(name, msg.Partition, msg.Offset, string(msg.Value))
			m.c.Ack(msg)
		})
	})
	t.Cleanup(func() { m.close(t) })
	return m
}

func (m *mismatchMember) close(t *testing.T) { m.once.Do(func() { m.instance.close(t) }) }

// mismatchFrom returns the *StrategyMismatchError m reported about peer,
// or nil, and how many it reported in all.
func (m *mismatchMember) mismatchFrom(peer string) (*manager.StrategyMismatchError, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var found *manager.StrategyMismatchError
	n := 0
	for _, err := range m.errs {
		var se *manager.StrategyMismatchError
		if errors.Is(err, manager.ErrStrategyMismatch) && errors.As(err, &se) {
			n++
			if se.Peer == peer {
				found = se
			}
		}
	}
	return found, n
}

// holding reports whether m is ready, sees members members and fetches
// exactly n partitions.
func holding(m *mismatchMember, members, n int) bool {
	st := m.c.Stats()
	return st.Ready && len(st.Members) == members && len(st.Partitions) == n && len(st.Assigned) == n
}

// TestStrategyMismatch runs three members of one group over 8 partitions:
// a with a custom strategy ("mine"), then b with balanced, then c with
// sticky. Within a session timeout of each join, the members on both sides
// report each other on Errors() (a *StrategyMismatchError matching
// ErrStrategyMismatch, naming both members and strategies and what the
// reporter does) and list each other in Stats.StrategyMismatches. While
// the oldest member (a) runs a strategy the others do not know, they claim
// nothing and a keeps all 8 partitions (no waiting on claims, no
// ping-pong); once a leaves, b's balanced is the oldest, c follows it and
// the two balance 4/4. Every message written before, during and after is
// consumed exactly once (counted per value, that is per partition and
// offset), and each member reports each peer once.
func TestStrategyMismatch(t *testing.T) {
	c := testcluster.Shared(t)
	began := time.Now()
	defer func() { t.Logf("took %v without the cluster's start", time.Since(began)) }()
	const parts = 8
	topic, group, sub := newTopic(t, c, parts)
	testcluster.MustProduce(t, c, topic, parts, 0, 800)
	led := testcluster.NewLedger()
	a := joinWithStrategy(t, c, group, sub, "a", assign.Func("mine", assign.Balanced().Assign), led)
	t.Logf("a owns 8 in %v", await(t, 60*time.Second, "a owning 8", func() bool { return holding(a, 1, parts) }))

	// The registration keeps the JVM's fields and adds the strategy.
	data, _, err := testcluster.ZooKeeper(t, c).Get(c.Chroot() + "/consumers/" + group + "/ids/a")
	if err != nil {
		t.Fatal(err)
	}
	var reg map[string]any
	if err := json.Unmarshal(data, &reg); err != nil {
		t.Fatalf("registration %s: %v", data, err)
	}
	if reg["zkgroup_strategy"] != "mine" || reg["pattern"] != "static" || reg["version"] != 1.0 || reg["timestamp"] == nil || reg["subscription"] == nil {
		t.Errorf("registration of a: %s", data)
	}
	timeout := a.c.Stats().SessionTimeout

	type want struct {
		m                                     *mismatchMember
		peer, own, peerStrategy, oldest, uses string
	}
	check := func(ws ...want) {
		t.Helper()
		for _, w := range ws {
			se, _ := w.m.mismatchFrom(w.peer)
			if se == nil {
				t.Errorf("%s did not report %s", w.m.name, w.peer)
				continue
			}
			if se.Member != w.m.name || se.Strategy != w.own || se.PeerStrategy != w.peerStrategy || se.Oldest != w.oldest || se.InForce != w.uses {
				t.Errorf("%s reported %+v", w.m.name, *se)
			}
		}
	}

	b := joinWithStrategy(t, c, group, sub, "b", assign.Balanced(), led)
	took := await(t, timeout, "a and b reporting each other", func() bool {
		x, _ := a.mismatchFrom("b")
		y, _ := b.mismatchFrom("a")
		return x != nil && y != nil
	})
	t.Logf("a and b reported the mismatch %v after b joined (session timeout %v)", took, timeout)
	check(want{a, "b", "mine", "balanced", "a", "mine"}, want{b, "a", "balanced", "mine", "a", ""})
	await(t, 60*time.Second, "a holding 8, b nothing", func() bool { return holding(a, 2, parts) && holding(b, 2, 0) })
	for _, w := range []struct {
		m     *mismatchMember
		peers []string
		uses  string
	}{{a, []string{"b"}, "mine"}, {b, []string{"a"}, ""}} {
		st := w.m.c.Stats()
		if !slices.Equal(st.StrategyMismatches, w.peers) || st.Strategy != w.uses {
			t.Errorf("%s: Stats.StrategyMismatches %v, Strategy %q; want %v, %q", w.m.name, st.StrategyMismatches, st.Strategy, w.peers, w.uses)
		}
		if se, _ := w.m.mismatchFrom(w.peers[0]); len(st.StrategyConflicts) != 1 || se == nil || st.StrategyConflicts[0] != *se {
			t.Errorf("%s: Stats.StrategyConflicts %+v; want what Errors() said, %+v", w.m.name, st.StrategyConflicts, se)
		}
	}
	testcluster.MustProduce(t, c, topic, parts, 800, 800)
	await(t, 60*time.Second, "1600 consumed", func() bool { return led.Count(topic, 1600) == 1600 })

	cc := joinWithStrategy(t, c, group, sub, "c", assign.Sticky(), led)
	await(t, timeout, "c reported by and reporting a and b", func() bool {
		x, _ := a.mismatchFrom("c")
		y, _ := b.mismatchFrom("c")
		z, _ := cc.mismatchFrom("a")
		w, _ := cc.mismatchFrom("b")
		return x != nil && y != nil && z != nil && w != nil
	})
	check(want{a, "c", "mine", "sticky", "a", "mine"}, want{b, "c", "balanced", "sticky", "a", ""},
		want{cc, "a", "sticky", "mine", "a", ""}, want{cc, "b", "sticky", "balanced", "a", ""})
	if !holding(a, 3, parts) || !holding(b, 3, 0) || !holding(cc, 3, 0) {
		t.Errorf("after c joined: a %v, b %v, c %v; want 8, 0, 0", a.c.Stats().Assigned, b.c.Stats().Assigned, cc.c.Stats().Assigned)
	}

	a.close(t)
	t.Logf("a left: b and c balanced 4/4 in %v", await(t, 60*time.Second, "b, c balanced", func() bool {
		return balancedConsumers(parts, b.c, cc.c)
	}))
	for _, w := range []struct {
		m    *mismatchMember
		peer string
	}{{b, "c"}, {cc, "b"}} {
		if st := w.m.c.Stats(); !slices.Equal(st.StrategyMismatches, []string{w.peer}) || st.Strategy != "balanced" {
			t.Errorf("%s: Stats.StrategyMismatches %v, Strategy %q; want [%s], balanced", w.m.name, st.StrategyMismatches, st.Strategy, w.peer)
		}
	}
	testcluster.MustProduce(t, c, topic, parts, 1600, 800)
	await(t, 60*time.Second, "2400 consumed", func() bool { return led.Count(topic, 2400) == 2400 })
	b.close(t)
	cc.close(t)
	led.CheckExactlyOnce(t, topic, 2400)
	for _, m := range []*mismatchMember{a, b, cc} {
		if _, n := m.mismatchFrom(""); n != 2 {
			t.Errorf("%s reported %d mismatches, want 2 (one per peer)", m.name, n)
		}
	}
}

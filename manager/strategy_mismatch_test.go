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
	name string
	c    *manager.Consumer
	wg   sync.WaitGroup
	once sync.Once
	mu   sync.Mutex
	errs []error
}

func joinWithStrategy(t *testing.T, c *testcluster.Cluster, group string, sub *subscription.Subscription, name string,
	s assign.Strategy, led *ledger) *mismatchMember {
	t.Helper()
	cfg := baseConfig(t, name)
	cfg.Strategy = s
	cons, err := manager.Join(context.Background(), group, sub, c.ZooKeeperConnect(), cfg)
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	m := &mismatchMember{name: name, c: cons}
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		for err := range cons.Errors() {
			t.Logf("%s: error: %v", name, err)
			m.mu.Lock()
			m.errs = append(m.errs, err)
			m.mu.Unlock()
		}
	}()
	go func() {
		defer m.wg.Done()
		for msg := range cons.Messages() {
			led.add(name, msg.Partition, msg.Offset, string(msg.Value))
			cons.Ack(msg)
		}
	}()
	t.Cleanup(func() { m.close(t) })
	return m
}

func (m *mismatchMember) close(t *testing.T) {
	m.once.Do(func() {
		if err := m.c.Close(); err != nil {
			t.Errorf("close %s: %v", m.name, err)
		}
		m.wg.Wait()
	})
}

// mismatch returns the first *StrategyMismatchError reported, or nil.
func (m *mismatchMember) mismatch() *manager.StrategyMismatchError {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, err := range m.errs {
		var se *manager.StrategyMismatchError
		if errors.Is(err, manager.ErrStrategyMismatch) && errors.As(err, &se) {
			return se
		}
	}
	return nil
}

// TestStrategyMismatch: a member configured with balanced owns 8
// partitions; one configured with sticky joins. Within a session timeout
// both report the other on Errors() (a *StrategyMismatchError matching
// ErrStrategyMismatch, naming both members and strategies) and list it in
// Stats.StrategyMismatches; both compute with the oldest member's strategy
// (balanced), so the group balances 4/4 instead of waiting on claims. When
// the older member leaves, the mismatch is over (Stats empty) and the
// sticky member owns everything with its own strategy. Every message
// written before, during and after is consumed exactly once (counted per
// value, i.e. per partition and offset).
func TestStrategyMismatch(t *testing.T) {
	c := testcluster.Shared(t)
	const parts = 8
	topic, group, sub := newTopic(t, c, parts)
	if _, err := c.Produce(topic, parts, 0, 800); err != nil {
		t.Fatal(err)
	}
	led := newLedger()
	a := joinWithStrategy(t, c, group, sub, "a", assign.Balanced(), led)
	t.Logf("a owns 8 in %v", await(t, 60*time.Second, "a owning 8", func() bool { return balancedConsumers(parts, a.c) }))

	// The registration keeps the JVM's fields and adds the strategy.
	data, _, err := testcluster.ZooKeeper(t, c).Get(c.Chroot() + "/consumers/" + group + "/ids/a")
	if err != nil {
		t.Fatal(err)
	}
	var reg map[string]any
	if err := json.Unmarshal(data, &reg); err != nil {
		t.Fatalf("registration %s: %v", data, err)
	}
	if reg["zkgroup_strategy"] != "balanced" || reg["pattern"] != "static" || reg["version"] != 1.0 || reg["timestamp"] == nil || reg["subscription"] == nil {
		t.Errorf("registration of a: %s", data)
	}

	b := joinWithStrategy(t, c, group, sub, "b", assign.Sticky(), led)
	timeout := a.c.Stats().SessionTimeout
	took := await(t, timeout, "both reporting the mismatch", func() bool { return a.mismatch() != nil && b.mismatch() != nil })
	t.Logf("both reported the mismatch %v after b joined (session timeout %v)", took, timeout)
	for _, tc := range []struct {
		m                                     *mismatchMember
		own, peer, peerStrategy, oldest, uses string
	}{
		{a, "balanced", "b", "sticky", "a", "balanced"},
		{b, "sticky", "a", "balanced", "a", "balanced"},
	} {
		se := tc.m.mismatch()
		if se.Member != tc.m.name || se.Strategy != tc.own || se.Peer != tc.peer || se.PeerStrategy != tc.peerStrategy ||
			se.Oldest != tc.oldest || se.InForce != tc.uses {
			t.Errorf("%s reported %+v", tc.m.name, *se)
		}
		st := tc.m.c.Stats()
		if !slices.Equal(st.StrategyMismatches, []string{tc.peer}) || st.Strategy != tc.uses {
			t.Errorf("%s: Stats.StrategyMismatches %v, Strategy %q; want [%s], %q", tc.m.name, st.StrategyMismatches, st.Strategy, tc.peer, tc.uses)
		}
	}
	t.Logf("balanced 4/4 %v later", await(t, 60*time.Second, "a, b balanced 4/4", func() bool { return balancedConsumers(parts, a.c, b.c) }))
	if _, err := c.Produce(topic, parts, 800, 800); err != nil {
		t.Fatal(err)
	}
	t.Logf("1600 consumed %v later", await(t, 60*time.Second, "1600 consumed", func() bool { return led.consumedCount(topic, 1600) == 1600 }))

	a.close(t)
	began := time.Now()
	await(t, 60*time.Second, "b owning 8, mismatch over", func() bool {
		st := b.c.Stats()
		return balancedConsumers(parts, b.c) && len(st.StrategyMismatches) == 0 && st.Strategy == "sticky"
	})
	t.Logf("a closed, b owning 8 with its own strategy %v later", time.Since(began))
	if _, err := c.Produce(topic, parts, 1600, 800); err != nil {
		t.Fatal(err)
	}
	await(t, 60*time.Second, "2400 consumed", func() bool { return led.consumedCount(topic, 2400) == 2400 })
	b.close(t)
	led.checkExactlyOnce(t, topic, 2400)
	for _, m := range []*mismatchMember{a, b} {
		m.mu.Lock()
		n := 0
		for _, err := range m.errs {
			if errors.Is(err, manager.ErrStrategyMismatch) {
				n++
			}
		}
		m.mu.Unlock()
		if n != 1 {
			t.Errorf("%s reported the mismatch %d times, want once while it lasted", m.name, n)
		}
	}
}

package manager_test

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// eachMember runs a member that reads with Each: merged, or one loop per
// partition stream. A merged loop leaves early every breakEvery messages
// and starts again (the rest of its batch must come first, once).
type eachMember struct {
	*instance
	cancel context.CancelFunc
}

func joinEach(t *testing.T, c *testcluster.Cluster, group, topic, name string, perPartition bool, led *testcluster.Ledger, breakEvery int) *eachMember {
	t.Helper()
	_, _, sub := topicSub(t, topic)
	cfg := baseConfig(t, name)
	// A revoke that waited for what an Each loop kept would take this
	// long, past the test's deadline.
	cfg.Partition.DrainTimeout = 60 * time.Second
	if perPartition {
		cfg.Mode = manager.ModePartitions
	}
	in := joinInstance(t, c.ZooKeeperConnect(), group, sub, name, cfg, nil)
	cons := in.c
	ctx, cancel := context.WithCancel(context.Background())
	em := &eachMember{instance: in, cancel: cancel}
	read := func(seq iter.Seq2[*manager.Message, error]) (broke bool) {
		n := 0
		for m, err := range seq {
			if err != nil {
				t.Errorf("%s: Each: %v", name, err)
				return false
			}
			led.Add(name, m.Partition, m.Offset, string(m.Value))
			m.Ack()
			if n++; breakEvery > 0 && n%breakEvery == 0 {
				return true
			}
		}
		return false
	}
	em.wg.Add(1)
	if perPartition {
		go func() {
			defer em.wg.Done()
			var streams sync.WaitGroup
			for s, err := range cons.EachPartition(ctx) {
				if err != nil {
					t.Errorf("%s: EachPartition: %v", name, err)
					break
				}
				streams.Go(func() {
					for read(s.Each(ctx)) {
					}
				})
			}
			streams.Wait()
		}()
	} else {
		go func() {
			defer em.wg.Done()
			for read(cons.Each(ctx)) {
			}
		}()
	}
	return em
}

func (em *eachMember) close(t *testing.T) {
	t.Helper()
	if err := em.c.Close(); err != nil {
		t.Errorf("close %s: %v", em.name, err)
	}
	em.cancel()
	em.wg.Wait()
}

// topicSub returns the static subscription of topic.
func topicSub(t *testing.T, topic string) (string, string, *manager.Subscription) {
	t.Helper()
	sub, err := manager.Static(topic)
	if err != nil {
		t.Fatal(err)
	}
	return topic, "", sub
}

// TestEachExactlyOnce: members reading with Each (merged, leaving the loop
// every 97 messages, and per partition) hand partitions over while
// messages flow: every message is consumed exactly once, and no revoke
// waits for what a loop kept (DrainTimeout is 60 s; the test gives 45 s).
func TestEachExactlyOnce(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, n = 6, 3000
	topic, group, _ := newTopic(t, c, parts)
	testcluster.MustProduce(t, c, topic, parts, 0, n/2)
	led := testcluster.NewLedger()
	a := joinEach(t, c, group, topic, "a", false, led, 97)
	await(t, 45*time.Second, "a consumed the first half", func() bool { return led.Count(topic, n/2) == n/2 })
	b := joinEach(t, c, group, topic, "b", true, led, 0)
	var produced atomic.Bool
	go func() {
		if _, err := c.Produce(topic, parts, n/2, n/2); err != nil {
			t.Error(err)
		}
		produced.Store(true)
	}()
	await(t, 45*time.Second, "both halves consumed", func() bool { return produced.Load() && led.Count(topic, n) == n })
	a.close(t) // hands everything to b
	testcluster.MustProduce(t, c, topic, parts, n, 300)
	await(t, 45*time.Second, "b consumed the rest after a left", func() bool { return led.Count(topic, n+300) == n+300 })
	b.close(t)
	led.CheckExactlyOnce(t, topic, n+300)
}

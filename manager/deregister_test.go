package manager_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// TestCloseDeregistersBeforeDrain: a member that closes deletes its
// registration before its partitions drain (every member follows the
// group's assignment node), so its peer rebalances while a held message
// keeps the drain going: the peer's member list loses it before Close
// returns, the peer's claims wait on the owner nodes without reporting
// them squatted (past ClaimWaitCheck), and once the message is acked the
// peer takes every partition over where the leaver committed: every
// message is delivered, and none twice.
func TestCloseDeregistersBeforeDrain(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, n = 4, 200 // n messages in all
	topic, group, sub := newTopic(t, c, parts)
	testcluster.MustProduce(t, c, topic, parts, 0, n)
	const claimWaitCheck = 300 * time.Millisecond

	a := joinManual(t, c, group, topic, "a", func(cfg *manager.Config) { cfg.Partition.DrainTimeout = time.Minute })
	await(t, 60*time.Second, "a owns every partition", func() bool { return len(a.Stats().Assigned) == parts })

	cfg := baseConfig(t, "b")
	cfg.ClaimWaitCheck = claimWaitCheck
	b, err := manager.Join(context.Background(), group, sub, c.ZooKeeperConnect(), cfg)
	if err != nil {
		t.Fatalf("join b: %v", err)
	}
	squats := make(chan error, 16)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for err := range b.Errors() {
			t.Logf("b: error: %v", err)
			if errors.Is(err, manager.ErrSquatted) {
				squats <- err
			}
		}
	}()
	var mu sync.Mutex
	got := map[manager.TopicPartition]map[int64]int{}
	go func() {
		defer wg.Done()
		for m, err := range b.Each(context.Background()) {
			if err != nil {
				return
			}
			mu.Lock()
			tp := manager.TopicPartition{Topic: m.Topic, Partition: m.Partition}
			if got[tp] == nil {
				got[tp] = map[int64]int{}
			}
			got[tp][m.Offset]++
			mu.Unlock()
			m.Ack()
		}
	}()
	t.Cleanup(func() { _ = b.Close(); wg.Wait() })
	await(t, 60*time.Second, "a and b share the partitions", func() bool { return balancedConsumers(parts, a, b) })
	// a's one delivery, of a partition it keeps, acked only once its Close
	// began.
	held := mustNext(t, a.Each, 60*time.Second)
	if !slicesHasTP(a.Stats().Assigned, topic, held.Partition) {
		t.Fatalf("a delivered partition %d, which it does not own", held.Partition)
	}

	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	await(t, 30*time.Second, "b's member list without a", func() bool { return len(b.Stats().Members) == 1 })
	select {
	case err := <-closed:
		t.Fatalf("a's Close returned (%v) before b saw it leave; want its registration gone while it drains", err)
	default:
	}
	select {
	case err := <-squats:
		t.Fatalf("b reported a partition of a member draining as squatted: %v", err)
	case err := <-closed:
		t.Fatalf("a's Close returned (%v) with a message held", err)
	case <-time.After(5 * claimWaitCheck): // b's claims wait past ClaimWaitCheck
	}
	if r := held.Ack(); r != manager.AckOK {
		t.Fatalf("ack of the held message during the drain: %v, want OK", r)
	}
	if err := <-closed; err != nil {
		t.Fatalf("a's Close: %v", err)
	}
	defer func() {
		if t.Failed() {
			mu.Lock()
			for tp, offs := range got {
				t.Logf("b got %d messages of %v", len(offs), tp)
			}
			mu.Unlock()
			t.Logf("b owns %v", b.Stats().Assigned)
		}
	}()
	await(t, 60*time.Second, "b consumes every message but the one a acked", func() bool {
		mu.Lock()
		defer mu.Unlock()
		k := 0
		for _, offs := range got {
			k += len(offs)
		}
		return len(b.Stats().Assigned) == parts && k >= n-1
	})
	mu.Lock()
	defer mu.Unlock()
	for tp, offs := range got {
		for off, k := range offs {
			if k > 1 {
				t.Errorf("%v offset %d delivered %d times to b", tp, off, k)
			}
		}
	}
	if k := got[manager.TopicPartition{Topic: held.Topic, Partition: held.Partition}][held.Offset]; k != 0 {
		t.Errorf("the message a acked (partition %d, offset %d) delivered again to b", held.Partition, held.Offset)
	}
	select {
	case err := <-squats:
		t.Errorf("b reported a squat: %v", err)
	default:
	}
}

// slicesHasTP reports whether tps holds partition p of topic.
func slicesHasTP(tps []manager.TopicPartition, topic string, p int32) bool {
	for _, tp := range tps {
		if tp.Topic == topic && tp.Partition == p {
			return true
		}
	}
	return false
}

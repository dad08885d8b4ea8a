package manager_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// joinManual joins an instance whose messages the test reads itself.
func joinManual(t *testing.T, c *testcluster.Cluster, group, topic, name string, configure func(*manager.Config)) *manager.Consumer {
	t.Helper()
	cfg := baseConfig(t, name)
	if configure != nil {
		configure(cfg)
	}
	sub := mustStatic(t, topic)
	cons, err := manager.Join(context.Background(), group, sub, c.ZooKeeperConnect(), cfg)
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	go func() {
		for err := range cons.Errors() {
			t.Logf("%s: error: %v", name, err)
		}
	}()
	t.Cleanup(func() { _ = cons.Close() })
	return cons
}

func partStats(cons *manager.Consumer, p int32) (manager.PartitionStats, bool) {
	for _, s := range cons.Stats().Partitions {
		if s.Partition == p {
			return s, true
		}
	}
	return manager.PartitionStats{}, false
}

// TestConsumeAckEdgeCases acks the wrong things through a real consumer;
// nothing panics and each ack reports what it did:
//   - nil and empty messages: AckInvalid;
//   - the same message twice: AckOK, then AckDuplicate while a lower
//     offset is pending, or AckUnknown once the watermark passed it;
//     both counted as DuplicateAcks;
//   - messages of partitions revoked by a rebalance (held unacked past the
//     drain timeout): AckStale, counted in Stats().StaleAcks; those
//     messages, never acked, are delivered again to the new owner, and
//     nothing else is;
//   - any message after Close: AckStale.
func TestConsumeAckEdgeCases(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, n = 4, 400
	topic, group, _ := newTopic(t, c, parts)
	testcluster.MustProduce(t, c, topic, parts, 0, n)
	a := joinManual(t, c, group, topic, "a", func(cfg *manager.Config) { cfg.Partition.DrainTimeout = time.Second })

	for _, m := range []*manager.Message{nil, {}} {
		if r := a.Ack(m); r != manager.AckInvalid {
			t.Errorf("Ack(%v) = %v, want invalid", m, r)
		}
		if r := m.Ack(); r != manager.AckInvalid {
			t.Errorf("(%v).Ack() = %v, want invalid", m, r)
		}
		if g := m.Generation(); g != 0 {
			t.Errorf("(%v).Generation() = %d, want 0", m, g)
		}
	}

	// Hold at least two messages of every partition, acking none.
	held := map[int32][]*manager.Message{}
	enough := func() bool {
		for p := int32(0); p < parts; p++ {
			if len(held[p]) < 2 {
				return false
			}
		}
		return true
	}
	for !enough() {
		m := mustNext(t, a.Each, 60*time.Second)
		if k := len(held[m.Partition]); k > 0 && m.Offset != held[m.Partition][k-1].Offset+1 {
			t.Fatalf("partition %d: offset %d after %d", m.Partition, m.Offset, held[m.Partition][k-1].Offset)
		}
		held[m.Partition] = append(held[m.Partition], m)
	}

	// Twice, out of order: m2 then m1 of partition 0.
	m1, m2 := held[0][0], held[0][1]
	for i, step := range []struct {
		m    *manager.Message
		want manager.AckResult
	}{{m2, manager.AckOK}, {m2, manager.AckDuplicate}, {m1, manager.AckOK}, {m1, manager.AckUnknown}, {m2, manager.AckUnknown}} {
		if r := a.Ack(step.m); r != step.want {
			t.Errorf("step %d: ack of offset %d = %v, want %v", i, step.m.Offset, r, step.want)
		}
	}
	if s, ok := partStats(a, 0); !ok || s.Acks != 2 || s.DuplicateAcks != 3 || s.Acked != m2.Offset+1 {
		t.Errorf("partition 0 stats: acks %d, duplicate acks %d, acked watermark %d; want 2, 3, %d", s.Acks, s.DuplicateAcks, s.Acked, m2.Offset+1)
	}
	held[0] = held[0][2:]

	// A rebalance revokes some of a's partitions while their messages are
	// held: the drain gives up after a second and b takes them over.
	rec := newRecorder(t)
	led := rec.Ledger
	b := joinPool(t, c, group, mustStatic(t, topic), "b", rec, poolOpts{workers: 2})
	await(t, 60*time.Second, "a down to 2 partitions, b owning 2", func() bool {
		sa, sb := a.Stats(), b.c.Stats()
		return sa.Ready && sb.Ready && len(sa.Partitions) == 2 && len(sb.Partitions) == 2
	})
	kept := map[int32]bool{}
	for _, s := range a.Stats().Partitions {
		kept[s.Partition] = true
	}
	stale := 0
	redeliverable := map[string]bool{}
	for p, ms := range held {
		for _, m := range ms {
			want := manager.AckOK
			if !kept[p] {
				want = manager.AckStale
				stale++
				redeliverable[string(m.Value)] = true
			}
			if r := a.Ack(m); r != want {
				t.Errorf("partition %d (kept %v): ack of offset %d = %v, want %v", p, kept[p], m.Offset, r, want)
			}
		}
	}
	if got := a.Stats().StaleAcks; got != uint64(stale) || stale == 0 {
		t.Errorf("Stats().StaleAcks = %d, want %d (> 0)", got, stale)
	}

	// a goes on consuming what it kept.
	var wg sync.WaitGroup
	wg.Go(func() {
		forEach(t, "Each", a.Each(context.Background()), func(m *manager.Message) {
			led.Add("a", m.Partition, m.Offset, string(m.Value))
			a.Ack(m)
		})
	})
	for _, ms := range held {
		for _, m := range ms {
			led.Add("a", m.Partition, m.Offset, string(m.Value))
		}
	}
	led.Add("a", m1.Partition, m1.Offset, string(m1.Value))
	led.Add("a", m2.Partition, m2.Offset, string(m2.Value))
	await(t, 2*time.Minute, "every message consumed, the revoked unacked ones by b too", func() bool {
		if led.Count(topic, n) != n {
			return false
		}
		for v := range redeliverable {
			if len(led.Deliveries(v)) < 2 {
				return false
			}
		}
		return true
	})
	if err := a.Close(); err != nil {
		t.Errorf("close a: %v", err)
	}
	wg.Wait()
	b.close(t)

	missing, dups := led.MissingAndDups(topic, n)
	if len(missing) > 0 {
		t.Errorf("%d messages never delivered: %s", len(missing), testcluster.Head(missing, 5))
	}
	for v, ds := range dups {
		if !redeliverable[v] {
			t.Errorf("%s delivered again though it was acked or never revoked unacked: %v", v, ds)
		}
	}
	if len(dups) != len(redeliverable) {
		t.Errorf("%d messages delivered twice, want the %d held unacked at the revoke", len(dups), len(redeliverable))
	}
	if r := a.Ack(m2); r != manager.AckStale {
		t.Errorf("ack after Close = %v, want stale", r)
	}
	rec.checkViolations(t)
}

// TestConsumeMaxUnackedBackpressure: with MaxUnacked = 10, a partition
// whose messages are not acked hands out exactly 10 and stops, while the
// other partitions, acked, are consumed to the end through the same
// merged loop (Each). Acks of the stuck partition then free exactly as
// many slots as the watermark moves: acking a message above the oldest
// unacked frees nothing; acking the oldest frees one.
func TestConsumeMaxUnackedBackpressure(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, per = 4, 100
	topic, group, _ := newTopic(t, c, parts)
	testcluster.MustProduce(t, c, topic, parts, 0, parts*per)
	a := joinManual(t, c, group, topic, "a", func(cfg *manager.Config) { cfg.Partition.MaxUnacked = 10 })

	var mu sync.Mutex
	count := map[int32]int{}
	var stuck []*manager.Message // partition 0, never acked by the reader
	done := make(chan struct{})
	go func() {
		defer close(done)
		forEach(t, "Each", a.Each(context.Background()), func(m *manager.Message) {
			mu.Lock()
			count[m.Partition]++
			if m.Partition == 0 {
				stuck = append(stuck, m)
			}
			mu.Unlock()
			if m.Partition != 0 {
				a.Ack(m)
			}
		})
	}()
	counts := func() map[int32]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[int32]int{}
		for p, k := range count {
			out[p] = k
		}
		return out
	}
	await(t, 2*time.Minute, "partitions 1-3 consumed to the end, 10 of partition 0", func() bool {
		k := counts()
		return k[0] == 10 && k[1] == per && k[2] == per && k[3] == per
	})
	// Absence can only be observed over a window.
	holds := func(what string, want int) {
		t.Helper()
		deadline := time.Now().Add(500 * time.Millisecond)
		for time.Now().Before(deadline) {
			if k := counts()[0]; k != want {
				t.Fatalf("%s: partition 0 handed out %d messages, want %d", what, k, want)
			}
			time.Sleep(10 * time.Millisecond) // observing that nothing happens
		}
		s, ok := partStats(a, 0)
		if !ok || s.Delivered != uint64(want) {
			t.Fatalf("%s: partition 0 stats delivered %d, want %d", what, s.Delivered, want)
		}
	}
	holds("nothing acked", 10)
	if s, _ := partStats(a, 0); s.Unacked != 10 || s.Acked != 0 {
		t.Errorf("partition 0: %d unacked, watermark %d; want 10, 0", s.Unacked, s.Acked)
	}

	mu.Lock()
	m := stuck[4]
	mu.Unlock()
	if r := a.Ack(m); r != manager.AckOK {
		t.Fatalf("ack of offset %d: %v", m.Offset, r)
	}
	holds("the 5th acked", 10)

	mu.Lock()
	m = stuck[0]
	mu.Unlock()
	a.Ack(m)
	await(t, 30*time.Second, "an 11th message of partition 0", func() bool { return counts()[0] == 11 })
	holds("the 1st and 5th acked", 11)

	// Acking the 2nd to 4th moves the watermark past the 5th: 4 more.
	mu.Lock()
	ms := append([]*manager.Message(nil), stuck[1:4]...)
	mu.Unlock()
	for _, m := range ms {
		a.Ack(m)
	}
	await(t, 30*time.Second, "15 messages of partition 0", func() bool { return counts()[0] == 15 })
	holds("the 1st to 5th acked", 15)

	// Ack everything from now on: partition 0 reaches its end.
	mu.Lock()
	rest := append([]*manager.Message(nil), stuck[5:]...)
	mu.Unlock()
	for _, m := range rest {
		a.Ack(m)
	}
	ackAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range stuck {
			a.Ack(m) // duplicates are counted no-ops
		}
	}
	await(t, 60*time.Second, "partition 0 to the end", func() bool { ackAll(); return counts()[0] == per })
	ackAll()
	if err := a.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	<-done
	hwm := testcluster.AwaitCommittedAtEnd(t, c, group, topic, parts)
	for p := int32(0); p < parts; p++ {
		if hwm[p] != per {
			t.Errorf("partition %d: log-end %d, want %d", p, hwm[p], per)
		}
	}
}

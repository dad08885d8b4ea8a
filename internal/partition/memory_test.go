package partition

import (
	"github.com/zkgroup/zkgroup/internal/tracker"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
	"unsafe"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"go.uber.org/goleak"
)

// liveMem returns the bytes of live heap objects and of goroutine stacks
// after two collections.
func liveMem() (heap, stacks uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}

// stackInUse returns the bytes of goroutine stacks in use (from each
// one's stack pointer up) as a collection scans them.
func stackInUse() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/scan/stack:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// liveHeap returns the bytes of live heap objects and goroutine stacks.
func liveHeap() uint64 {
	h, s := liveMem()
	return h + s
}

// idleCost is what idle partition managers cost, per manager.
type idleCost struct {
	heap, stacks float64 // live bytes
	stackInUse   float64 // of stacks, what the goroutines use
	goroutines   float64
}

// measureIdle starts n managers (partitions 0..n-1 of feeds, from offset
// 0), receives and acks per messages of each, waits until every manager
// is idle (everything acked, waiting for more, and the Committer, on a
// short interval, has visited it while it was idle) and returns the live
// bytes and goroutines per manager, measured against before the managers
// started. With ackLate, every message is acked only once all were
// received (a backlog caught up with MaxUnacked outstanding). The feeds
// (the fake fetcher's logs and their Records, the fetch's side) exist
// before and after; each partition's open fake Fetch is counted (a few
// dozen bytes and a channel, where a fetch.Partition holds its buffer of
// PartitionBuffer pointers besides).
func measureIdle(t testing.TB, n, per int, ackLate bool) idleCost {
	feeds := feedsOf(n, per)
	out := make(chan *Handout) // shared, as the merged stream's
	fence := newFence()
	store := &memStore{committed: map[int32]int64{}}
	for p := range n {
		store.committed[int32(p)] = 0
	}
	cfg := NewConfig()
	cfg.CommitInterval = 10 * time.Millisecond
	committer := committerFor(t, store, cfg)
	g0 := runtime.NumGoroutine()
	h0, s0 := liveMem()
	u0 := stackInUse()
	var ms []*Manager
	for p := range n {
		m, err := New(Params{Topic: "t", Partition: int32(p), Client: noResolver{}, Fetcher: feeds,
			Store: store, Committer: committer, Fence: fence, Batches: out, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		stepOn(m) // as the consumer manager runs it: parked while idle
		ms = append(ms, m)
	}
	var late []*Message
	for got := 0; got < n*per; {
		select {
		case b := <-out:
			got += b.Len()
			for _, msg := range b.Messages {
				if ackLate {
					late = append(late, msg)
				} else if r := msg.Ack(); r != AckOK {
					t.Fatalf("ack %d: %v", msg.Offset, r)
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not every message was handed out")
		}
	}
	for _, msg := range late {
		if r := msg.Ack(); r != AckOK {
			t.Fatalf("ack %d: %v", msg.Offset, r)
		}
	}
	late = nil
	for _, m := range ms {
		testcluster.Await(t, 10*time.Second, time.Millisecond, "an idle manager", func() bool {
			s := m.Stats()
			if s.Delivered != uint64(per) || s.Unacked != 0 || s.Committed != int64(per) {
				return false
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.tracker != nil && m.tracker.Capacity() == 0 // visited while idle
		})
	}
	g1 := runtime.NumGoroutine()
	h1, s1 := liveMem()
	u1 := stackInUse()
	for _, m := range ms {
		_ = m.Stop(false)
	}
	runtime.KeepAlive(feeds)
	per1 := func(a, b uint64) float64 { return (float64(b) - float64(a)) / float64(n) }
	return idleCost{heap: per1(h0, h1), stacks: per1(s0, s1), stackInUse: per1(u0, u1), goroutines: float64(g1-g0) / float64(n)}
}

// measureTracker returns the live bytes per Tracker that delivered per
// messages, all outstanding at once, and then had them all acked; then
// (then > 0) delivered and acked then more, one at a time.
func measureTracker(n, per, then int) float64 {
	at := time.Now()
	b0 := liveHeap()
	trs := make([]*tracker.Tracker, n)
	for i := range trs {
		trs[i] = tracker.NewTracker(0)
		for o := range int64(per) {
			_ = trs[i].Deliver(o, at)
		}
		for o := range int64(per) {
			trs[i].Ack(o)
		}
		for o := int64(per); o < int64(per+then); o++ {
			_ = trs[i].Deliver(o, at)
			trs[i].Ack(o)
		}
	}
	b1 := liveHeap()
	runtime.KeepAlive(trs)
	return (float64(b1) - float64(b0)) / float64(n)
}

// BenchmarkIdleMemory reports what an idle partition costs: a manager
// that started and never got a message, one that handed out 10,000
// messages acked as they came (after-flow), one whose 10,000 messages
// were all outstanding before they were acked (after-backlog: a backlog
// caught up with MaxUnacked outstanding); and a Tracker right after such a
// backlog, and after a few messages more (its ring shrinks back).
//
//	go test -run '^$' -bench IdleMemory -benchtime 1x ./internal/partition/
func BenchmarkIdleMemory(b *testing.B) {
	const n = 200
	for _, c := range []struct {
		name string
		per  int
		late bool
	}{{"started", 0, false}, {"after-flow", 10000, false}, {"after-backlog", 10000, true}} {
		b.Run("manager-"+c.name, func(b *testing.B) {
			for range b.N {
				cost := measureIdle(b, n, c.per, c.late)
				b.ReportMetric(cost.heap+cost.stacks, "B/partition")
				b.ReportMetric(cost.heap, "heap-B/partition")
				b.ReportMetric(cost.goroutines, "goroutines/partition")
			}
		})
	}
	b.Run("tracker-after-backlog", func(b *testing.B) {
		for range b.N {
			b.ReportMetric(measureTracker(n, 10000, 0), "B/tracker")
		}
	})
	b.Run("tracker-after-backlog-and-more", func(b *testing.B) {
		for range b.N {
			b.ReportMetric(measureTracker(n, 10000, 3), "B/tracker")
		}
	})
}

// TestIdleManagerCost bounds what an idle partition costs after it caught
// up a backlog: one goroutine, the manager's (the fetch adds none per
// partition; nothing watches the fence), a few kilobytes of heap, and
// a stack the runtime can shrink to 4 KiB.
//
// TestManagerSizeClass: a Manager fits the 768-byte allocation size
// class (the next is 896): one is allocated per owned partition.
func TestManagerSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(Manager{}); n > 768 {
		t.Errorf("Manager is %d bytes, over the 768-byte size class", n)
	}
}

// TestIdleManagerCost: an idle partition, run as the consumer manager
// runs it (Step, parked while idle), holds no goroutine and no stack, and
// a bounded heap.
func TestIdleManagerCost(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the other cleanups
	n, per := 50, 2000
	if testing.Short() {
		n = 20
	}
	cost := measureIdle(t, n, per, true)
	t.Logf("an idle partition: %.0f bytes of heap, %.0f of stacks (%.0f in use), %.1f goroutines", cost.heap, cost.stacks, cost.stackInUse, cost.goroutines)
	if cost.goroutines != 0 {
		t.Errorf("%.2f goroutines per idle partition, want 0 (parked)", cost.goroutines)
	}
	if cost.heap > 8<<10 {
		t.Errorf("%.0f bytes of heap per idle partition, want at most 8 KB", cost.heap)
	}
	if cost.stackInUse > 64 {
		t.Errorf("%.0f bytes of stack in use per idle partition, want none", cost.stackInUse)
	}
}

package partition

import (
	"runtime"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/offsets"
)

// liveHeap returns the bytes of live heap objects and goroutine stacks
// after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse
}

// idleCost is what idle partition managers cost, per manager.
type idleCost struct {
	bytes      float64 // live heap and stacks
	goroutines float64
}

// measureIdle starts n managers (partitions 0..n-1 of feeds, from offset
// 0), receives and acks per messages of each, waits until every manager
// is idle (everything acked, waiting for more) and returns the live bytes
// and goroutines per manager, measured against before the managers
// started. With ackLate, every message is acked only once all were
// received (a backlog caught up with MaxUnacked outstanding). The feeds (the fetched messages, sarama's side) exist before
// and after; the fake partition consumers' buffers (256 pointers, like
// sarama's with ChannelBufferSize 256) and feeder goroutines are counted.
func measureIdle(t testing.TB, n, per int, ackLate bool) idleCost {
	feeds := feedsOf(n, per)
	out := make(chan *Message, 1024)
	fence := newFence()
	store := &memStore{committed: map[int32]int64{}}
	for p := range n {
		store.committed[int32(p)] = 0
	}
	cfg := NewConfig()
	cfg.CommitInterval = time.Hour
	g0, b0 := runtime.NumGoroutine(), liveHeap()
	var ms []*Manager
	for p := range n {
		m, err := Start(Params{Topic: "t", Partition: int32(p), Client: noResolver{}, Consumer: feedConsumer{batches: feeds},
			Store: store, Fence: fence, Out: out, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	var late []*Message
	for range n * per {
		select {
		case msg := <-out:
			if ackLate {
				late = append(late, msg)
			} else if r := msg.Ack(); r != AckOK {
				t.Fatalf("ack %d: %v", msg.Offset, r)
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
			return s.Delivered == uint64(per) && s.Unacked == 0 && s.Acked == int64(per)
		})
	}
	g1, b1 := runtime.NumGoroutine(), liveHeap()
	for _, m := range ms {
		_ = m.Stop(false)
	}
	runtime.KeepAlive(feeds)
	return idleCost{bytes: (float64(b1) - float64(b0)) / float64(n), goroutines: float64(g1-g0) / float64(n)}
}

// measureTracker returns the live bytes per Tracker that delivered per
// messages, all outstanding at once, and then had them all acked.
func measureTracker(n, per int) float64 {
	at := time.Now()
	b0 := liveHeap()
	trs := make([]*offsets.Tracker, n)
	for i := range trs {
		trs[i] = offsets.NewTracker(0)
		for o := range int64(per) {
			_ = trs[i].Deliver(o, at)
		}
		for o := range int64(per) {
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
// caught up with MaxUnacked outstanding), and a Tracker after such a
// backlog.
//
//	go test -run '^$' -bench IdleMemory -benchtime 1x ./partition/
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
				b.ReportMetric(cost.bytes, "B/partition")
				b.ReportMetric(cost.goroutines, "goroutines/partition")
			}
		})
	}
	b.Run("tracker-after-burst", func(b *testing.B) {
		for range b.N {
			b.ReportMetric(measureTracker(n, 10000), "B/tracker")
		}
	})
}

package manager

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// testReq is a request of a batchQueue under test.
type testReq struct {
	n int
	batchTurn
}

// testBatcher sends each batch by waiting for release; it records the
// batches and the most out at once.
type testBatcher struct {
	batchQueue[*testReq]
	release            chan struct{}
	mu                 sync.Mutex
	batches            [][]int
	out, maxOut, sends atomic.Int32
}

func (b *testBatcher) do(n int) {
	r := &testReq{n: n, batchTurn: newTurn()}
	b.run(r, func() {
		batch, answered := b.lead()
		ns := make([]int, len(batch))
		for i, r := range batch {
			ns[i] = r.n
		}
		b.mu.Lock()
		b.batches = append(b.batches, ns)
		b.mu.Unlock()
		out := b.out.Add(1)
		for {
			m := b.maxOut.Load()
			if out <= m || b.maxOut.CompareAndSwap(m, out) {
				break
			}
		}
		b.sends.Add(1)
		<-b.release
		b.out.Add(-1)
		for _, r := range batch {
			close(r.done)
		}
		answered()
	})
}

// TestBatchQueueHandsOverEarly: requests queued behind a batch that is
// not answered go out in another batch after handOverAfter, without
// waiting for it, up to maxInFlight batches out at once; once answered,
// the rest go, and every caller returns.
func TestBatchQueueHandsOverEarly(t *testing.T) {
	b := &testBatcher{release: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() { b.do(0) })
	testcluster.Await(t, 5*time.Second, time.Millisecond, "the first batch out", func() bool { return b.sends.Load() == 1 })
	// One more request while the first batch is out: it goes in a batch
	// of its own before the first is answered.
	wg.Go(func() { b.do(1) })
	testcluster.Await(t, 5*time.Second, time.Millisecond, "the second batch out", func() bool { return b.sends.Load() == 2 })
	// More, one batch after another: at most maxInFlight are out.
	const total = maxInFlight + 3
	for i := 2; i < total; i++ {
		wg.Go(func() { b.do(i) })
		if i < maxInFlight {
			testcluster.Await(t, 5*time.Second, time.Millisecond, "another batch out", func() bool { return int(b.sends.Load()) == i+1 })
		}
	}
	time.Sleep(3 * handOverAfter) // room for a batch too many to go out (none must)
	if n := b.maxOut.Load(); n != maxInFlight {
		t.Fatalf("%d batches out at once; want %d", n, maxInFlight)
	}
	close(b.release)
	wg.Wait()
	seen := map[int]bool{}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, batch := range b.batches {
		for _, n := range batch {
			if seen[n] {
				t.Fatalf("request %d sent twice: %v", n, b.batches)
			}
			seen[n] = true
		}
	}
	if len(seen) != total {
		t.Fatalf("%d requests sent of %d: %v", len(seen), total, b.batches)
	}
	if b.batches[0][0] != 0 || len(b.batches[0]) != 1 || b.batches[1][0] != 1 || len(b.batches[1]) != 1 {
		t.Fatalf("batches %v; want [0] then [1] first", b.batches)
	}
}

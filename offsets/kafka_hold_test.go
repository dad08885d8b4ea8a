package offsets

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/offsetslink"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestKafkaHoldLinkOthers: offsetslink.Hold holds nothing but a KafkaStore.
func TestKafkaHoldLinkOthers(t *testing.T) {
	var nilStore *KafkaStore
	for _, store := range []any{nil, nilStore, &ZooKeeperStore{}} {
		if h, ok := offsetslink.Hold(store, 1); ok || h != nil {
			t.Errorf("offsetslink.Hold(%T): %v, %v; want nil, false", store, h, ok)
		}
	}
}

// TestKafkaHold: commits queued under a hold, one after another, go out in
// one round (one OffsetCommit, one read-back) once the expected number
// came; Fewer ends a hold whose other writes will not come; Release ends
// it at once.
func TestKafkaHold(t *testing.T) {
	c := testcluster.Shared(t)
	verifyNoLeaks(t)
	const partitions = 6
	topic := clusterTopic(t, c, partitions)
	s := clusterKafkaStore(t, c, testcluster.Name(t, "group"))
	// A first commit, so that the coordinator is known and the counts
	// below are the hold's alone.
	if err := s.Commit(context.Background(), topic, 0, 1); err != nil {
		t.Fatal(err)
	}
	commitAll := func(ps []int32, next int64, each time.Duration) *sync.WaitGroup {
		var wg sync.WaitGroup
		for _, p := range ps {
			wg.Go(func() {
				if err := s.Commit(context.Background(), topic, p, next); err != nil {
					t.Error(err)
				}
			})
			time.Sleep(each) // the calls come one after another, as drains end
		}
		return &wg
	}

	// All expected calls come: one round. The hold is taken as manager
	// takes it, through offsetslink.
	before := s.Stats()
	hl, ok := offsetslink.Hold(s, partitions)
	if !ok {
		t.Fatal("offsetslink.Hold of a KafkaStore: not held")
	}
	takes := s.takes.Load()
	commitAll([]int32{0, 1, 2, 3, 4, 5}, 10, 5*time.Millisecond).Wait()
	hl.Release()
	after := s.Stats()
	if r, cr := after.Rounds-before.Rounds, after.CommitRequests-before.CommitRequests; r != 1 || cr != 1 {
		t.Errorf("%d commits under a hold of %d: %d rounds, %d OffsetCommit requests; want 1 and 1", partitions, partitions, r, cr)
	}
	// A held call does not wake the batcher: the call that ends the hold
	// and the Release do (a scan of the queue per held call made a
	// Close's final commits quadratic).
	if n := s.takes.Load() - takes; n > 2 {
		t.Errorf("%d commits under a hold: the batcher scanned its queue %d times; want at most 2", partitions, n)
	}
	for p := int32(0); p < partitions; p++ {
		wantOffset(t, s, topic, p, 10)
	}

	// Two of four come, Fewer(2) says the others will not: the two go
	// out together.
	before = s.Stats()
	h := s.startHold(4)
	wg := commitAll([]int32{0, 1}, 20, 5*time.Millisecond)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		t.Fatal("commits went out while the hold waited for two more")
	case <-time.After(200 * time.Millisecond):
	}
	h.Fewer(2)
	<-done
	after = s.Stats()
	if r := after.Rounds - before.Rounds; r != 1 {
		t.Errorf("2 commits, then Fewer(2): %d rounds; want 1", r)
	}

	// Release ends a hold at once.
	h = s.startHold(10)
	wg = commitAll([]int32{2}, 30, 0)
	h.Release()
	wg.Wait()
	wantOffset(t, s, topic, 2, 30)

	// Fetch and CommitBatch calls are not held (a consumer's routine batch
	// holds back the final commits the hold waits for), except a batch
	// entry of a partition whose held Commit is queued before it: it
	// stays behind that Commit.
	h = s.startHold(2)
	defer h.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a round takes well under it
	defer cancel()
	if errs := s.CommitBatch(ctx, []Offset{{TopicPartition: TopicPartition{topic, 3}, Next: 40}}); errs[0] != nil {
		t.Fatalf("a batch under a hold: %v", errs[0])
	}
	if next, ok, err := s.Fetch(ctx, topic, 3); err != nil || !ok || next != 40 {
		t.Fatalf("a fetch under a hold: %d, %v, %v; want 40", next, ok, err)
	}
	held := commitAll([]int32{4}, 50, 0)
	testcluster.Await(t, time.Minute, time.Millisecond, "the held commit queued", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.queue) == 1
	})
	batched := make(chan []error, 1)
	go func() {
		batched <- s.CommitBatch(ctx, []Offset{{TopicPartition: TopicPartition{topic, 4}, Next: 45}, {TopicPartition: TopicPartition{topic, 5}, Next: 45}})
	}()
	select {
	case errs := <-batched:
		t.Fatalf("a batch writing a partition of a held commit went out before it (errors %v)", errs)
	case <-time.After(200 * time.Millisecond):
	}
	h.Release()
	held.Wait()
	for _, err := range <-batched {
		if err != nil {
			t.Error(err)
		}
	}
	wantOffset(t, s, topic, 4, 50) // the batch's 45 came after: below what was committed, skipped
	wantOffset(t, s, topic, 5, 45)
}

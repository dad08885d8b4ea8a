package manager

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/zkgroup/zkgroup/internal/partition"
)

// prefetchWorkers bounds the concurrent starts of prefetch.
const prefetchWorkers = 16

// prefetchBudget is how many JoinSettles prefetch may take: the first
// offset query of a member finds the group's coordinator first, which can
// take longer than the settle, and a partition started after its claim
// would wait for the same answers.
const prefetchBudget = 3

// prefetch opens, while a new member waits JoinSettle before its first
// assignment, the fetches (the member's fetch.Fetcher) of the partitions it
// would be assigned if the group stayed as it is and that nobody owns: the
// start-up (committed offset and offset queries, routing to the leader,
// the first fetch) then runs during the settle instead of after the claim.
// Nothing is handed out before the claim: each partition's manager reads
// the committed offset again once it holds the claim and uses the
// prefetched fetch only if it covers that (partition.Prefetched.Covers).
// What the first assignment does not take is closed (dropPrefetched).
//
// It blocks the loop for at most prefetchBudget × JoinSettle (starts not
// under way by then are skipped: the first assignment is not held up
// longer than that for them) and is skipped when JoinSettle is 0.
func (c *Consumer) prefetch() {
	if c.cfg.JoinSettle <= 0 {
		return
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), prefetchBudget*c.cfg.JoinSettle)
	defer cancel()
	pl, err := c.computePlan(false, writerWait{})
	if err != nil {
		c.log.Debug("no prefetch", "error", err)
		return
	}
	var todo []TopicPartition
	for tp := range pl.mine {
		if pl.ownerOf(tp) == "" {
			todo = append(todo, tp)
		}
	}
	out := make(map[TopicPartition]*partition.Prefetched, len(todo))
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan TopicPartition)
	for range min(prefetchWorkers, len(todo)) {
		wg.Go(func() {
			for tp := range next {
				if pre := c.prefetchOne(ctx, tp); pre != nil {
					mu.Lock()
					out[tp] = pre
					mu.Unlock()
				}
			}
		})
	}
feed:
	for _, tp := range todo {
		select {
		case next <- tp:
		case <-ctx.Done():
			break feed
		case <-c.t.Dying():
			break feed
		}
	}
	close(next)
	wg.Wait()
	c.mu.Lock()
	c.prefetched = out
	c.mu.Unlock()
	c.log.Debug("prefetched", "partitions", len(out), "planned", len(pl.mine), "took", time.Since(began))
}

// prefetchOne opens tp's fetch at its committed offset, or at
// the Initial position when it has none; nil when any step fails (the
// partition then starts the usual way, after its claim).
func (c *Consumer) prefetchOne(ctx context.Context, tp TopicPartition) *partition.Prefetched {
	next, ok, err := c.store.Fetch(ctx, tp.Topic, tp.Partition)
	if err != nil {
		return nil
	}
	return c.openAt(ctx, tp, next, ok)
}

// openAt opens tp's fetch at next (ok: the committed offset), or at the
// Initial position when there is none; nil when that fails.
func (c *Consumer) openAt(ctx context.Context, tp TopicPartition, next int64, ok bool) *partition.Prefetched {
	var err error
	pre := &partition.Prefetched{Offset: next}
	if !ok {
		pre.Initial = partition.InitialOffset(c.cfg.Partition)
		if pre.Offset, err = c.lister.GetOffset(tp.Topic, tp.Partition, pre.Initial); err != nil {
			return nil
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if pre.FP, err = c.fetcher.Add(tp.Topic, tp.Partition, pre.Offset); err != nil {
		return nil
	}
	return pre
}

// takePrefetchedLocked hands tp's prefetched consumer (or nil) to its
// slot. c.mu must be held.
func (st *slotTable) takePrefetchedLocked(tp TopicPartition) *partition.Prefetched {
	pre := st.prefetched[tp]
	delete(st.prefetched, tp)
	return pre
}

// dropPrefetched closes what no slot took: after the first assignment
// (which took what it starts) and at shutdown.
func (c *Consumer) dropPrefetched() {
	c.mu.Lock()
	left := c.prefetched
	c.prefetched = nil
	c.mu.Unlock()
	for _, pre := range left {
		pre.FP.Close()
	}
}

// claimPrefetch opens, while a slot's claim is being made, the fetch of a
// partition its plan saw unowned (its previous owner released it, or
// left): the read of the committed offset and the first fetch, which a
// partition otherwise begins only once the claim is made and OnAssigned
// returned, then overlap the claim's ZooKeeper requests and the callback.
// As with prefetch, nothing is handed out before the claim: the manager
// reads the committed offset again once it holds the claim and uses the
// fetch only if it covers that. Only with offsets in Kafka (in
// ZooKeeper the read would queue on the member's session, ahead of the
// claims). Its goroutine is the slot goroutine's: take waits for it, and
// hands its result over (the slot closes it if no manager takes it).
type claimPrefetch struct {
	cancel context.CancelFunc
	done   chan struct{}
	pre    *partition.Prefetched // set before done is closed
}

// startClaimPrefetch starts tp's prefetch, bounded by CommitTimeout.
func (c *Consumer) startClaimPrefetch(tp TopicPartition) *claimPrefetch {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Partition.CommitTimeout)
	p := &claimPrefetch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.pre = c.prefetchOne(ctx, tp)
	}()
	return p
}

// take waits for the prefetch to end, cutting it short once stop is
// closed (nil: never), and returns what it opened (nil: nothing).
func (p *claimPrefetch) take(stop <-chan struct{}) *partition.Prefetched {
	select {
	case <-p.done:
	case <-stop:
		p.cancel()
		<-p.done
	}
	p.cancel()
	return p.pre
}

// readAfterClaim reads the partition's committed offset once sl's claim
// is made, while its OnAssigned waits for the rest of its rebalance's
// claims, so that the partition's manager starts at once after the
// callback. The fetch opened before the claim is kept when it covers
// that offset (partition.Prefetched.Covers), and closed and opened there
// otherwise (reopenAtCommitted). When the read fails, the manager reads
// again. Only with offsets in Kafka: in ZooKeeper the reads would queue
// on the member's session, ahead of the claims still under way. Its
// goroutine, as claimPrefetch's, is the slot's: take waits for it.
func (c *Consumer) readAfterClaim(sl *slot, log *slog.Logger) {
	if c.cfg.OffsetStorage != StorageKafka {
		return
	}
	before, held := sl.claimPre, sl.pre
	sl.claimPre, sl.pre = nil, nil
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Partition.CommitTimeout)
	p := &claimPrefetch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		pre := held
		if before != nil {
			pre = before.take(ctx.Done())
		}
		p.pre = c.reopenAtCommitted(ctx, sl.tp, pre, log)
	}()
	sl.claimPre = p
}

// reopenAtCommitted reads tp's committed offset and returns pre marked
// Read if it covers it (opened there or below, see
// partition.Prefetched.Covers: a previous owner's last commits moved the
// offset on meanwhile, and what pre fetched from there on is used), or
// else a fetch opened there (pre closed). When the read fails, pre as it
// is (the manager reads again).
func (c *Consumer) reopenAtCommitted(ctx context.Context, tp TopicPartition, pre *partition.Prefetched, log *slog.Logger) *partition.Prefetched {
	next, ok, err := c.store.Fetch(ctx, tp.Topic, tp.Partition)
	if err != nil {
		return pre
	}
	pos := next
	if !ok {
		pos = partition.InitialOffset(c.cfg.Partition)
	}
	kept := pre.Covers(pos)
	log.Debug("read the committed offset after the claim", "offset", next, "committed", ok, "fetch_kept", kept)
	if kept {
		if ok {
			pre.Initial = 0 // it starts at the committed offset now
			pre.At = next
		}
		pre.Read = true
		return pre
	}
	if pre != nil {
		pre.FP.Close()
	}
	pre = c.openAt(ctx, tp, next, ok)
	if pre != nil {
		pre.Read = true
	}
	return pre
}

package manager

import "sync"

// batchQueue is the queue of a batcher whose callers send the batches
// themselves (opBatcher, readBatcher): the first caller of a quiet queue
// leads, sending one batch of everything queued; those that come while a
// batch is under way wait for the batch they are in, or to be handed the
// lead of the next one. So no caller waits for more than the batch its
// request is in and the one before. The zero value is ready; safe for
// concurrent use.
type batchQueue[R any] struct {
	mu    sync.Mutex
	queue []R
	busy  bool // a caller is sending a batch
}

// push queues r and reports whether its caller leads: it sends the next
// batch at once.
func (q *batchQueue[R]) push(r R) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queue = append(q.queue, r)
	leader := !q.busy
	q.busy = true
	return leader
}

// take takes everything queued: the leader's batch.
func (q *batchQueue[R]) take() []R {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.queue
	q.queue = nil
	return batch
}

// handOver ends the leader's batch: lead is called (under the queue's
// lock) with the first request queued meanwhile, whose caller sends the
// next batch; with none queued, the queue is quiet again.
func (q *batchQueue[R]) handOver(lead func(R)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) == 0 {
		q.busy = false
		return
	}
	lead(q.queue[0])
}

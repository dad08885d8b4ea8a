package manager

import "sync"

// batchQueue is the queue of a batcher whose callers send the batches
// themselves (opBatcher, readBatcher): the first caller of a quiet queue
// leads, sending one batch of everything queued; those that come while a
// batch is under way wait for the batch they are in, or to be handed the
// lead of the next one. So no caller waits for more than the batch its
// request is in and the one before. The zero value is ready; safe for
// concurrent use.
type batchQueue[R interface{ turn() *batchTurn }] struct {
	mu    sync.Mutex
	queue []R
	busy  bool // a caller is sending a batch
}

// batchTurn is what a queued request's caller waits on; embedded in the
// request.
type batchTurn struct {
	done chan struct{} // closed once the request's batch was sent and answered
	lead chan struct{} // closed when this caller is to send the next batch
}

func newTurn() batchTurn { return batchTurn{done: make(chan struct{}), lead: make(chan struct{})} }

func (t *batchTurn) turn() *batchTurn { return t }

// run queues r and returns once the batch r is in was sent and answered:
// its caller sends that batch (send: take, send, handOver) when it leads
// or is handed the lead, else another caller does.
func (q *batchQueue[R]) run(r R, send func()) {
	t := r.turn()
	if !q.push(r) {
		select {
		case <-t.done:
			return
		case <-t.lead:
		}
	}
	send()
	<-t.done // r was queued: the batch sent included it
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

// handOver ends the leader's batch: the first request queued meanwhile is
// handed the lead (its caller sends the next batch); with none queued,
// the queue is quiet again.
func (q *batchQueue[R]) handOver() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) == 0 {
		q.busy = false
		return
	}
	close(q.queue[0].turn().lead)
}

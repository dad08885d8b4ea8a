package manager

import (
	"sync"
	"time"
)

// handOverAfter and maxInFlight: a batch not answered within
// handOverAfter hands the lead over (if requests are queued and fewer
// than maxInFlight batches are out), so that the requests queued behind
// it go out meanwhile. A session's replies come in order after the events
// the server sent before them: a claim's create, sent alone as the first
// of thousands when another member's session ended, was answered only
// after all of that session's owner-node deletions had been read (0.28 s
// at 5,000 partitions), and every other create waited for it.
const (
	handOverAfter = 20 * time.Millisecond
	maxInFlight   = 16
)

// batchQueue is the queue of a batcher whose callers send the batches
// themselves (opBatcher, readBatcher): the first caller of a quiet queue
// leads, sending one batch of everything queued; those that come while a
// batch is under way wait for the batch they are in, or to be handed the
// lead of the next one, when the batch was answered or after
// handOverAfter (up to maxInFlight batches out at once). So no caller
// waits for more than the batch its request is in and those before it.
// The zero value is ready; safe for concurrent use.
type batchQueue[R interface{ turn() *batchTurn }] struct {
	mu       sync.Mutex
	queue    []R
	busy     bool // a caller is to send the next batch, or sending it
	inFlight int  // batches taken and not answered yet
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
// its caller sends that batch (send: lead, send, answered) when it leads
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

// lead takes everything queued, the leader's batch, and returns it with
// answered, to call once the batch was answered: the lead is handed over
// then, or before, once the batch is out for handOverAfter (see
// batchQueue).
func (q *batchQueue[R]) lead() (batch []R, answered func()) {
	q.mu.Lock()
	batch, q.queue = q.queue, nil
	q.inFlight++
	q.mu.Unlock()
	var (
		once   sync.Once
		mu     sync.Mutex
		timer  *time.Timer
		closed bool
	)
	hand := func() { once.Do(q.handOver) }
	mu.Lock()
	timer = time.AfterFunc(handOverAfter, func() {
		q.mu.Lock()
		early := len(q.queue) > 0 && q.inFlight < maxInFlight
		q.mu.Unlock()
		if early {
			hand()
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			timer.Reset(handOverAfter) // look again: requests may come
		}
	})
	mu.Unlock()
	return batch, func() {
		mu.Lock()
		closed = true
		timer.Stop()
		mu.Unlock()
		q.mu.Lock()
		q.inFlight--
		q.mu.Unlock()
		hand()
	}
}

// handOver passes the lead on: the first request queued meanwhile is
// handed it (its caller sends the next batch); with none queued, the
// queue is quiet again.
func (q *batchQueue[R]) handOver() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) == 0 {
		q.busy = false
		return
	}
	close(q.queue[0].turn().lead)
}

package partition

import (
	"sync"

	"github.com/IBM/sarama"
)

// Reaper finishes closing the sarama PartitionConsumers that Managers stop
// fetching from: sarama closes a PartitionConsumer's channels only once its
// broker's fetch loop has let go of it (up to a fetch cycle, Consumer.
// MaxWaitTime), and their buffers must be drained meanwhile. A Manager
// hands its PartitionConsumer over and goes on at once (to drain, commit
// and release the partition) instead of waiting for that. One per
// consumer, shared by its Managers; safe for concurrent use.
type Reaper struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// NewReaper returns a Reaper; the caller must Close it once every Manager
// using it has stopped, before closing the sarama Consumer.
func NewReaper() *Reaper { return &Reaper{} }

// Reap closes pc and drains it in a goroutine of its own; after Close (or
// on a nil Reaper) it does so before returning. Safe for concurrent use.
func (r *Reaper) Reap(pc sarama.PartitionConsumer) {
	pc.AsyncClose()
	if r != nil {
		r.mu.Lock()
		if !r.closed {
			r.wg.Add(1)
			r.mu.Unlock()
			go func() {
				defer r.wg.Done()
				drainPC(pc)
			}()
			return
		}
		r.mu.Unlock()
	}
	drainPC(pc)
}

// drainPC discards what pc fetched but nobody took, until sarama closes
// its channels.
func drainPC(pc sarama.PartitionConsumer) {
	for range pc.Messages() {
	}
	for range pc.Errors() {
	}
}

// Close waits until every PartitionConsumer handed over is closed; later
// ones are drained by their Manager itself. Idempotent; blocks for at most
// about one fetch cycle per broker.
func (r *Reaper) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.wg.Wait()
}

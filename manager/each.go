package manager

import (
	"context"
	"iter"
	"sync"

	"github.com/zkgroup/zkgroup/internal/partition"
)

// Each returns an iterator over the merged stream's messages (ModeMerged),
// one by one, for a range loop:
//
//	for m := range c.Each(ctx) {
//		process(m)
//		m.Ack()
//	}
//
// The loop ends when the consumer stops (Close, Interrupt) or ctx ends.
// With DeliveryBatches it takes a batch at a time and yields its messages
// in the caller's goroutine: one hand-off per batch instead of one
// channel rendezvous per message, with the guarantees of the unbuffered
// Messages() channel kept per message. Before each message it checks its
// partition: once the partition manager stops (revoke) or loses the claim,
// the rest of that batch is never yielded (it is abandoned, so a drain
// does not wait for it, and goes to the next owner); while the ZooKeeper
// session is suspended it waits. With DeliveryMessages it ranges over
// Messages(). In ModePartitions it yields nothing (use
// PartitionStream.Each).
//
// A loop left early (break, or ctx ended) keeps the rest of its batch for
// the next Each, which yields it first; a revoke (or Close) abandons what
// is kept of that partition before its drain, so it never waits for it.
// Several Each loops may
// run at once (each batch goes to one of them). Blocks only while
// iterating.
func (c *Consumer) Each(ctx context.Context) iter.Seq[*Message] {
	if c.cfg.Mode == ModeMerged && c.cfg.Delivery == DeliveryBatches {
		return eachBatch(ctx, c.batches, &c.eachRest)
	}
	return eachMessage(ctx, c.messages)
}

// Each is Consumer.Each for this partition (ModePartitions): the loop ends
// when the stream closes (the partition was revoked or lost, or the
// consumer stopped) or ctx ends.
func (s *PartitionStream) Each(ctx context.Context) iter.Seq[*Message] {
	if s.bch != closedBatches {
		return eachBatch(ctx, s.bch, &s.rest)
	}
	return eachMessage(ctx, s.ch)
}

// leftovers holds what Each loops left early: batches and the index of
// the first message not yielded. Safe for concurrent use.
type leftovers struct {
	mu   sync.Mutex
	rest []leftover
}

type leftover struct {
	b *partition.Batch
	i int
}

func (l *leftovers) take() (*partition.Batch, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.rest) == 0 {
		return nil, 0
	}
	x := l.rest[0]
	l.rest = l.rest[1:]
	return x.b, x.i
}

func (l *leftovers) put(b *partition.Batch, i int) {
	if i >= len(b.Messages) {
		return
	}
	l.mu.Lock()
	l.rest = append(l.rest, leftover{b, i})
	l.mu.Unlock()
}

// abandonOf abandons the messages kept of pm's batches (see
// partition.Message.Abandon): pm calls it once it hands nothing out any
// more, before its drain (Params.BeforeDrain), so none of them can still
// reach the user.
func (l *leftovers) abandonOf(pm *partition.Manager) {
	l.mu.Lock()
	var mine []leftover
	kept := l.rest[:0]
	for _, x := range l.rest {
		if x.b.Owner() == pm {
			mine = append(mine, x)
		} else {
			kept = append(kept, x)
		}
	}
	clear(l.rest[len(kept):])
	l.rest = kept
	l.mu.Unlock()
	for _, x := range mine {
		for _, m := range x.b.Messages[x.i:] {
			m.Abandon()
		}
	}
}

func eachBatch(ctx context.Context, src <-chan *partition.Batch, rest *leftovers) iter.Seq[*Message] {
	return func(yield func(*Message) bool) {
		b, i := rest.take()
		for {
			if b == nil {
				nb, err := poll(ctx, src)
				if err != nil {
					return // the source closed, or ctx ended
				}
				b, i = nb, 0
			}
		batch:
			for ; i < len(b.Messages); i++ {
				switch b.Pass(ctx, i) {
				case partition.PassDropped:
					break batch
				case partition.PassCancelled:
					rest.put(b, i)
					return
				}
				if !yield(b.Messages[i]) {
					rest.put(b, i+1)
					return
				}
			}
			b = nil
		}
	}
}

func eachMessage(ctx context.Context, src <-chan *partition.Message) iter.Seq[*Message] {
	return func(yield func(*Message) bool) {
		for {
			select {
			case m, ok := <-src:
				if !ok || !yield(m) {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}
}

package manager

import (
	"context"
	"iter"
	"sync"

	"github.com/zkgroup/zkgroup/internal/partition"
)

// Each returns the consumer's loop (ModeMerged): every owned partition's
// messages, one at a time, each partition's in offset order.
//
//	for msg, err := range c.Each(ctx) {
//		if err != nil {
//			return err // ErrMode: the consumer is in ModePartitions
//		}
//		process(msg)
//		msg.Ack()
//	}
//
// The loop ends when ctx ends or the consumer stops (Close, Interrupt, or
// a failure); a failure is yielded last (the error Close returns, also
// from Err). In ModePartitions it yields ErrMode once and ends. Messages are fetched ahead, a batch per partition at a
// time, and handed out one by one in the caller's goroutine: before each
// message its partition is checked, so that nothing is yielded once its
// partition was revoked or lost (the rest of that batch is abandoned: a
// drain does not wait for it, and it goes to the next owner) and nothing
// while the ZooKeeper session is suspended or the ownership's lease is not
// known to be valid (the loop waits).
//
// A loop left early (break, or ctx ended) keeps the rest of its batch for
// the next Each, which yields it first; a revoke (or Close) abandons what
// is kept of that partition before its drain, so it never waits for it.
// Several Each loops may run at once (each batch goes to one of them).
func (c *Consumer) Each(ctx context.Context) iter.Seq2[*Message, error] {
	if c.cfg.Mode != ModeMerged {
		return modeErr[*Message]()
	}
	return func(yield func(*Message, error) bool) {
		if !yieldBatches(ctx, c.batches, &c.eachRest, yield) || ctx.Err() != nil {
			return
		}
		if err := c.Err(); err != nil { // the consumer stopped on a failure
			yield(nil, err)
		}
	}
}

// Each is PartitionStream.Each: Consumer.Each for one partition.
func (s *partStream) Each(ctx context.Context) iter.Seq2[*Message, error] {
	return func(yield func(*Message, error) bool) { yieldBatches(ctx, s.bch, &s.rest, yield) }
}

// modeErr yields ErrMode once.
func modeErr[T any]() iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, ErrMode)
	}
}

// leftovers holds what Each loops left early: batches and the index of
// the first message not yielded. Safe for concurrent use.
type leftovers struct {
	mu   sync.Mutex
	rest []leftover
}

type leftover struct {
	b *partition.Handout
	i int
}

func (l *leftovers) take() (*partition.Handout, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.rest) == 0 {
		return nil, 0
	}
	x := l.rest[0]
	l.rest = l.rest[1:]
	return x.b, x.i
}

func (l *leftovers) put(b *partition.Handout, i int) {
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

// yieldBatches yields the messages of the batches src hands out, the
// ones rest kept first, each once Pass allowed it; false when yield said
// stop (the rest of the batch is kept). The caller's yield is called
// directly, with no closure of ours around it: it runs once per message.
func yieldBatches(ctx context.Context, src <-chan *partition.Handout, rest *leftovers, yield func(*Message, error) bool) bool {
	b, i := rest.take()
	for {
		if b == nil {
			nb, err := poll(ctx, src)
			if err != nil {
				return true // the source closed, or ctx ended
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
				return true
			}
			if !yield(b.Messages[i], nil) {
				rest.put(b, i+1)
				return false
			}
		}
		b = nil
	}
}

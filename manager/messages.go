package manager

import (
	"context"
	"sync"

	"github.com/zkgroup/zkgroup/internal/partition"
)

// Messages returns the consumer's messages as a channel (ModeMerged), the
// shape of the old ZooKeeper consumers' API: every owned partition's
// messages, each partition's in offset order.
//
//	for msg := range c.Messages() {
//		process(msg)
//		c.Ack(msg) // or msg.Ack(); any order, any goroutine
//	}
//	err := c.Err() // why the channel closed: nil after Close or Interrupt
//
// A select over it, Errors() and a shutdown signal works as well (see
// ExampleConsumer_Messages); call Interrupt (or Close) to stop, and keep
// receiving until the channel is closed.
//
// Contract:
//   - Unbuffered: a message is offered only while its partition is owned,
//     the lease holds and the session is not suspended, checked on the
//     clock before each offer as Each does; an offer is withdrawn when the
//     partition is revoked or lost (the message and the rest of its batch
//     go to the next owner, none is skipped) and held while the session is
//     suspended (offered again once it is healthy). No message of a
//     partition is received after that partition's OnRevoked or OnLost
//     began: its Stop waits for an offer under way to be taken or withdrawn.
//     A received message counts as handed out: a revoke's drain waits for
//     its ack (up to PartitionConfig.DrainTimeout), so a clean handoff
//     delivers nothing twice.
//   - Closed exactly once, by the consumer, once it stopped (Close,
//     Interrupt, a failure) and every partition was drained, committed and
//     stopped; then Errors() is closed, then Done(). Never closed before.
//     Err reports why it closed.
//   - Nobody reading: the partitions stop fetching once MaxUnacked messages
//     or their fetch buffers are outstanding, and nothing is lost; Close
//     does not wait for a reader (what is offered is withdrawn, what was
//     received and not acked is waited for up to DrainTimeout).
//   - The first call starts the one goroutine that feeds it (owned by the
//     consumer, ended before Close returns); every call returns the same
//     channel. Each and Poll take from the same batches: use one of them.
//   - In ModePartitions the channel is closed at once, ErrMode is
//     reported on Errors(), and Err returns ErrMode.
//
// What no check covers: the message on offer when the process froze is
// received as soon as the process wakes, before any goroutine noticed
// that the lease ended; it is at most one message, the same exposure as a
// message Each yielded just before the freeze (see the package doc).
func (c *Consumer) Messages() <-chan *Message {
	return c.fwd.channel(c)
}

// Err reports why the consumer stopped: nil while it runs and after a
// clean stop (Close, Interrupt), the error Close returns otherwise (a
// failure, or CloseTimeout passed with partitions still stopping), and
// ErrMode after Messages was called in ModePartitions. Once Each ended
// without ctx ending, or Messages was closed, Err is final.
func (c *Consumer) Err() error {
	c.fwd.mu.Lock()
	mode := c.fwd.modeErr
	c.fwd.mu.Unlock()
	if mode {
		return ErrMode
	}
	select {
	case <-c.ended:
		return c.closeErr
	default:
		return nil
	}
}

// forwarder feeds Consumer.Messages from the consumer's batches, one
// message at a time, on an unbuffered channel.
type forwarder struct {
	mu      sync.Mutex
	cond    sync.Cond // signalled when offering changes (under mu)
	out     chan *Message
	started bool
	stopped bool // the batches were closed: nothing more to forward
	modeErr bool // Messages was called in ModePartitions
	done    chan struct{}
	// offering is the partition manager whose batch the forwarder is
	// handing out, nil between batches (under mu). Set before each batch's
	// first Pass: a Stop that finds it unset after its halt was closed
	// knows that no Pass of the forwarder can say PassOK for it any more.
	offering *partition.Manager
}

// channel returns the Messages channel, starting the forwarder on the
// first call.
func (f *forwarder) channel(c *Consumer) <-chan *Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.out != nil {
		return f.out
	}
	f.out = make(chan *Message)
	switch {
	case c.cfg.Mode != ModeMerged:
		f.modeErr = true
		close(f.out)
		c.log.Error("Messages called on a consumer in ModePartitions; use EachPartition", "error", ErrMode)
		if !f.stopped { // Errors() is still open: finish closes it after stop
			c.report(ErrMode)
		}
	case f.stopped:
		close(f.out)
	default:
		f.started = true
		f.done = make(chan struct{})
		go f.run(c.batches)
	}
	return f.out
}

// stop is called by finish once the batches were closed: it waits for the
// forwarder, which then closes the channel.
func (f *forwarder) stop() {
	f.mu.Lock()
	f.stopped = true
	started := f.started
	f.mu.Unlock()
	if started {
		<-f.done
	}
}

// halted is every partition manager's Params.Halted: it returns once no
// offer of pm's messages is under way, so that none is received after it.
func (f *forwarder) halted(pm *partition.Manager) {
	f.mu.Lock()
	for f.offering == pm && pm != nil {
		f.cond.Wait()
	}
	f.mu.Unlock()
}

func (f *forwarder) setOffering(pm *partition.Manager) {
	f.mu.Lock()
	f.offering = pm
	f.mu.Unlock()
	if pm == nil {
		f.cond.Broadcast()
	}
}

// run forwards every batch's messages until src is closed, then closes out.
func (f *forwarder) run(src <-chan *partition.Batch) {
	defer close(f.done)
	defer close(f.out)
	ctx := context.Background() // Pass waits on halt, not on a context
	for b := range src {
		f.forward(ctx, b)
	}
}

// forward offers b's messages one by one, each once Pass allowed it.
func (f *forwarder) forward(ctx context.Context, b *partition.Batch) {
	pm, halt, _ := b.Watch()
	f.setOffering(pm)
	defer f.setOffering(nil)
	for i := 0; i < len(b.Messages); {
		if b.Pass(ctx, i) != partition.PassOK {
			return // stopped or lost (the rest was abandoned), or a seek
		}
		_, _, suspended := b.Watch()
		m := messageOf(b.Messages[i])
		select {
		case f.out <- m: // the receiver was waiting
			i++
			continue
		default:
		}
		select {
		case f.out <- m:
			i++
		case <-halt: // Pass abandons the rest
		case <-suspended: // Pass waits until the session is healthy
		}
	}
}

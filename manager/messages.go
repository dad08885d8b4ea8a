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
//   - Up to MessagesBuffer messages wait in the channel ahead of the
//     receiver, each put in only while its partition was owned, the lease
//     held and the session was not suspended (checked on the clock, as
//     Each does). When a suspension begins, what the receiver has not taken
//     is taken back and offered again once the session is healthy; when a
//     partition is revoked or lost, its messages not yet taken are taken
//     back and abandoned (they go to the next owner; none is skipped), and
//     its Stop waits for that: no message of a partition is received after
//     its OnRevoked or OnLost began. A received message counts as handed
//     out: a revoke's drain waits for its ack (up to
//     PartitionConfig.DrainTimeout), so a clean handoff delivers nothing
//     twice. Each partition's messages come in offset order.
//   - Closed exactly once, by the consumer, once it stopped (Close,
//     Interrupt, a failure) and every partition was drained, committed and
//     stopped; then Errors() is closed, then Done(). Never closed before.
//     Err reports why it closed.
//   - Nobody reading: the partitions stop fetching once MaxUnacked messages
//     or their fetch buffers are outstanding, and nothing is lost; Close
//     does not wait for a reader (what was not taken is taken back; what
//     was received and not acked is waited for up to DrainTimeout).
//   - The first call starts the one goroutine that feeds it (owned by the
//     consumer, ended before Close returns); every call returns the same
//     channel. Each and Poll take from the same batches: use one of them.
//   - In ModePartitions the channel is closed at once, ErrMode is
//     reported on Errors(), and Err returns ErrMode.
//
// What no check covers: after a freeze of the process (a pause, SIGSTOP)
// the receiver may take the messages waiting in the channel, at most
// MessagesBuffer, before any goroutine noticed that the lease ended (see
// the package doc).
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

// MessagesBuffer is how many messages Messages may hold ahead of its
// receiver. Each was checked against its partition's ownership and the
// lease when it was put in; a handoff through a buffer of this size costs
// a fraction of an unbuffered one's, which parks a goroutine per message.
const MessagesBuffer = 16

// forwarder feeds Consumer.Messages from the consumer's batches on a
// channel of MessagesBuffer. It is the channel's only sender, so it can
// take back what the receiver has not taken yet: everything, when the
// session's suspension begins (offered again once it is healthy), and at
// a partition's Stop (its messages abandoned, the others offered again in
// order).
type forwarder struct {
	mu      sync.Mutex
	out     chan *Message
	started bool
	stopped bool // the batches were closed: nothing more to forward
	modeErr bool // Messages was called in ModePartitions
	done    chan struct{}
	// purges are the Stops waiting for their partition's messages to be
	// taken back (under mu); wake tells the forwarder (buffered 1), and
	// cancel ends a Pass waiting on a suspended session.
	purges []purge
	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	// The forwarder goroutine's own: what may still be in out (the last
	// len(out) of them are), and what was taken back, to be offered again
	// before anything else.
	inflight []entry
	pending  []entry
}

// entry is a message of a batch, by index; with rest, the messages of
// the batch from it on.
type entry struct {
	b    *partition.Batch
	i    int
	rest bool
}

type purge struct {
	pm   *partition.Manager
	done chan struct{}
}

// channel returns the Messages channel, starting the forwarder on the
// first call.
func (f *forwarder) channel(c *Consumer) <-chan *Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.out != nil {
		return f.out
	}
	f.out = make(chan *Message, MessagesBuffer)
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
		f.wake = make(chan struct{}, 1)
		f.ctx, f.cancel = context.WithCancel(context.Background())
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
		f.cancel()
	}
}

// halted is every partition manager's Params.Halted, called once pm's halt
// is closed: it returns once no message of pm is in the channel or on its
// way there (those not received were abandoned), so that none is received
// after it.
func (f *forwarder) halted(pm *partition.Manager) {
	f.mu.Lock()
	if !f.started || f.stopped || pm == nil {
		f.mu.Unlock()
		return
	}
	p := purge{pm: pm, done: make(chan struct{})}
	f.purges = append(f.purges, p)
	cancel := f.cancel
	f.mu.Unlock()
	cancel()
	select {
	case f.wake <- struct{}{}:
	default:
	}
	<-p.done
}

// run forwards every batch's messages until src is closed, then closes out.
func (f *forwarder) run(src <-chan *partition.Batch) {
	defer close(f.done)
	defer close(f.out)
	var suspended <-chan struct{} // as the last PassOK saw it
	for {
		for len(f.pending) > 0 {
			e := f.pending[0]
			f.pending = f.pending[1:]
			f.forward(e, &suspended)
		}
		select {
		case b, ok := <-src:
			if !ok {
				return // every partition stopped: nothing is left in out
			}
			f.forward(entry{b: b, rest: true}, &suspended)
		case <-f.wake:
			f.serve()
		case <-suspended:
			suspended = nil
			f.takeBack()
		}
	}
}

// forward offers e's message (and with e.rest the rest of its batch), each
// once Pass allowed it. When it must stop to take back what is in out (a
// suspension, a Stop waiting), it puts what is left of e first in pending,
// behind what it takes back, and returns.
func (f *forwarder) forward(e entry, suspended *<-chan struct{}) {
	b := e.b
	_, halt, _ := b.Watch()
	for e.i < len(b.Messages) {
		switch b.Pass(f.passCtx(), e.i) {
		case partition.PassOK:
		case partition.PassCancelled: // a Stop is waiting
			f.pending = append([]entry{e}, f.pending...)
			f.serve()
			return
		default:
			f.skip(b) // stopped or lost (the rest was abandoned), or a seek
			return
		}
		_, _, *suspended = b.Watch()
		m := messageOf(b.Messages[e.i])
		select {
		case f.out <- m: // room in the buffer
		default:
			select {
			case f.out <- m:
			case <-halt:
				continue // Pass abandons the rest
			case <-*suspended:
				*suspended = nil
				f.pending = append([]entry{e}, f.pending...)
				f.takeBack() // offered again once the session is healthy
				return
			case <-f.wake:
				f.pending = append([]entry{e}, f.pending...)
				f.serve()
				return
			}
		}
		f.note(entry{b: b, i: e.i})
		if e.i++; !e.rest {
			return
		}
	}
}

// passCtx is the context of the forwarder's Pass calls: halted cancels it
// so that a Pass waiting on a suspended session lets the forwarder serve
// the Stop.
func (f *forwarder) passCtx() context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() != nil {
		f.ctx, f.cancel = context.WithCancel(context.Background())
	}
	return f.ctx
}

// note records e as sent, keeping at least the last len(out) entries.
func (f *forwarder) note(e entry) {
	f.inflight = append(f.inflight, e)
	if len(f.inflight) > 4*MessagesBuffer {
		keep := len(f.out) // the receiver may have taken more since: keep a few too many
		n := copy(f.inflight, f.inflight[len(f.inflight)-keep:])
		clear(f.inflight[n:])
		f.inflight = f.inflight[:n]
	}
}

// takeBack takes back what the receiver has not taken from out: the last
// entries sent, in order, offered again before anything else.
func (f *forwarder) takeBack() {
	k := 0
	for {
		select {
		case <-f.out:
			k++
			continue
		default:
		}
		break
	}
	k = min(k, len(f.inflight)) // note keeps at least len(out)
	back := f.inflight[len(f.inflight)-k:]
	f.pending = append(append([]entry(nil), back...), f.pending...)
	clear(f.inflight)
	f.inflight = f.inflight[:0]
}

// serve takes back what is in out and answers the Stops waiting: their
// partitions' entries are dropped through Pass (halt is closed: it
// abandons them), so that the drains do not wait for them.
func (f *forwarder) serve() {
	f.mu.Lock()
	ps := f.purges
	f.purges = nil
	f.mu.Unlock()
	if len(ps) == 0 {
		return
	}
	f.takeBack()
	for _, p := range ps {
		kept := f.pending[:0]
		var last *partition.Batch
		for _, e := range f.pending {
			if owner, _, _ := e.b.Watch(); owner != p.pm {
				kept = append(kept, e)
				continue
			}
			if e.b != last { // the batch's first entry taken back: the rest follow it
				last = e.b
				e.b.Pass(context.Background(), e.i) // PassDropped: abandons from e.i on
			}
		}
		clear(f.pending[len(kept):])
		f.pending = kept
		close(p.done)
	}
}

// skip drops the pending entries of b (Pass refused it: they were
// abandoned with the rest of b, or forgotten by a seek).
func (f *forwarder) skip(b *partition.Batch) {
	kept := f.pending[:0]
	for _, e := range f.pending {
		if e.b != b {
			kept = append(kept, e)
		}
	}
	clear(f.pending[len(kept):])
	f.pending = kept
}

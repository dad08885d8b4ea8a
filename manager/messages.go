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
//     Each does); each partition's messages come in offset order.
//   - A message in the channel counts as handed out. At a revoke nothing
//     more of the partition is put in, and its drain waits for the acks of
//     what is in the channel as of any handed-out message (up to
//     PartitionConfig.DrainTimeout): a clean handoff delivers nothing
//     twice. Once the partition stopped, before its OnRevoked or OnLost,
//     what the receiver has not taken of it (a lost partition's, or what a
//     drain gave up on) is taken back: none of its messages is received
//     after OnRevoked or OnLost began, and the next owner gets them.
//   - When the session's suspension begins, what the receiver has not
//     taken is taken back and offered again once the session is healthy:
//     nothing is received while it is suspended, except a message the
//     receiver takes in the instant the suspension begins, which may then
//     come ahead of one of its partition taken back.
//   - Closed exactly once, by the consumer, once it stopped (Close,
//     Interrupt, a failure) and every partition was drained, committed and
//     stopped; then Errors() is closed, then Done(). Never closed before.
//     Err reports why it closed.
//   - Nobody reading: the partitions stop fetching once MaxUnacked messages
//     or their fetch buffers are outstanding, and nothing is lost. Close
//     waits for what is in the channel as for any handed-out message, up to
//     DrainTimeout, then takes it back: keep receiving until the channel is
//     closed.
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
// take back what the receiver has not taken yet: everything when the
// session's suspension begins (offered again once it is healthy), and a
// partition's messages once the partition stopped (a lost one, or one
// whose drain ended before the receiver took them).
type forwarder struct {
	mu      sync.Mutex
	out     chan *Message
	started bool
	stopped bool // the batches were closed: nothing more to forward
	modeErr bool // Messages was called in ModePartitions
	done    chan struct{}
	// requests are the partition Stops waiting for the forwarder (under
	// mu); wake tells it (buffered 1), and cancel ends a Pass waiting on
	// a suspended session.
	requests []request
	wake     chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc

	// The forwarder goroutine's own: what was sent (the last len(out) of
	// them may still be in out), and what was taken back, to be offered
	// again before anything else.
	inflight []entry
	pending  []entry
}

// entry is a message of a batch, by index (m: the message, once sent);
// with rest, the messages of the batch from it on.
type entry struct {
	b    *partition.Handout
	i    int
	rest bool
	m    *Message
}

// request is a partition's Stop waiting on the forwarder: settle, once
// its halt is closed, until no message of pm can be put in any more;
// withdraw, once it stopped, until none of its messages is in out.
type request struct {
	pm       *partition.Manager
	withdraw bool
	done     chan struct{}
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

// halted is every partition manager's Params.Halted, called once pm's
// halt is closed: it returns once no message of pm can be put in out any
// more. What is in out already stays: a drain waits for its acks.
func (f *forwarder) halted(pm *partition.Manager) { f.ask(pm, false) }

// withdraw is called once pm stopped (drained and committed, or lost), before
// its OnRevoked or OnLost: it takes back the messages of pm the receiver
// has not taken (a lost partition's, or those a drain gave up on) and
// abandons them, so that none is received after it.
func (f *forwarder) withdraw(pm *partition.Manager) { f.ask(pm, true) }

func (f *forwarder) ask(pm *partition.Manager, withdraw bool) {
	f.mu.Lock()
	if !f.started || f.stopped || pm == nil {
		f.mu.Unlock()
		return
	}
	r := request{pm: pm, withdraw: withdraw, done: make(chan struct{})}
	f.requests = append(f.requests, r)
	cancel := f.cancel
	f.mu.Unlock()
	cancel()
	select {
	case f.wake <- struct{}{}:
	default:
	}
	<-r.done
}

// run forwards every batch's messages until src is closed, then closes out.
func (f *forwarder) run(src <-chan *partition.Handout) {
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
			f.takeBack(nil)
		}
	}
}

// forward offers e's message (and with e.rest the rest of its batch), each
// once Pass allowed it. When it must stop to serve a request or take back
// what is in out (a suspension), it puts what is left of e first in
// pending and returns.
func (f *forwarder) forward(e entry, suspended *<-chan struct{}) {
	b := e.b
	_, halt, _ := b.Watch()
	// One context for the call: a request cancels it, which matters only
	// to a Pass that waits on a suspended session, and then this returns.
	ctx := f.passCtx()
	for e.i < len(b.Messages) {
		switch b.Pass(ctx, e.i) {
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
		m := b.Messages[e.i]
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
				f.takeBack(nil) // offered again once the session is healthy
				return
			case <-f.wake:
				f.pending = append([]entry{e}, f.pending...)
				f.serve()
				return
			}
		}
		f.note(entry{b: b, i: e.i, m: m})
		if e.i++; !e.rest {
			return
		}
	}
}

// passCtx is the context of the forwarder's Pass calls: a request cancels
// it, so that a Pass waiting on a suspended session lets the forwarder
// serve it.
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

// mayHold reports whether out may hold a message of pm: one of the last
// len(out) sent.
func (f *forwarder) mayHold(pm *partition.Manager) bool {
	n := min(len(f.out), len(f.inflight))
	for _, e := range f.inflight[len(f.inflight)-n:] {
		if owner, _, _ := e.b.Watch(); owner == pm {
			return true
		}
	}
	return false
}

// takeBack takes back everything the receiver has not taken from out. The
// messages of drop's managers are abandoned (through Pass: their halt is
// closed); the others go first in pending, in the order they were sent.
// A message the receiver takes meanwhile stays taken: taken back are only
// the messages this goroutine received, found by identity.
func (f *forwarder) takeBack(drop map[*partition.Manager]bool) {
	var got []*Message
	for {
		select {
		case m := <-f.out:
			got = append(got, m)
			continue
		default:
		}
		break
	}
	if len(got) == 0 {
		return
	}
	back := make([]entry, 0, len(got))
	j := 0 // got is in the order sent, a subsequence of inflight's tail
	for _, e := range f.inflight {
		if j < len(got) && e.m == got[j] {
			back = append(back, e)
			j++
		}
	}
	clear(f.inflight)
	f.inflight = f.inflight[:0]
	kept := back[:0]
	dropped := map[*partition.Handout]bool{}
	for _, e := range back {
		owner, _, _ := e.b.Watch()
		if !drop[owner] {
			e.m = nil
			kept = append(kept, e)
			continue
		}
		if !dropped[e.b] { // the batch's first message taken back: the rest follow it
			dropped[e.b] = true
			e.b.Pass(context.Background(), e.i) // PassDropped: abandons from e.i on
		}
	}
	f.pending = append(kept, f.pending...)
	for b := range dropped {
		f.skip(b)
	}
}

// serve answers the requests waiting: a settle needs nothing more (the
// forwarder is between two sends; every later one is of a batch passed
// after the halt); a withdraw takes back what the receiver has not taken,
// dropping its partition's messages, when out may hold one.
func (f *forwarder) serve() {
	f.mu.Lock()
	rs := f.requests
	f.requests = nil
	f.mu.Unlock()
	drop := map[*partition.Manager]bool{}
	for _, r := range rs {
		if r.withdraw && f.mayHold(r.pm) {
			drop[r.pm] = true
		}
	}
	if len(drop) > 0 {
		f.takeBack(drop)
	}
	for _, r := range rs {
		close(r.done)
	}
}

// skip drops the pending entries of b (Pass refused it: they were
// abandoned with the rest of b, or forgotten by a seek).
func (f *forwarder) skip(b *partition.Handout) {
	kept := f.pending[:0]
	for _, e := range f.pending {
		if e.b != b {
			kept = append(kept, e)
		}
	}
	clear(f.pending[len(kept):])
	f.pending = kept
}

package fetch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

// Partition is one assigned partition of a Fetcher: its consumer takes
// what was fetched with Take (blocking) or Ready and Poll. Safe for
// concurrent use, though one consumer goroutine per partition is the
// intended use (ordering is per Take).
//
// Contracts:
//   - Ordering: Records come in offset order, each one starting where the
//     previous one's NextOffset left off (after SetOffset: at the new offset).
//   - Bound: at most Config.PartitionBuffer Records are buffered. While
//     the buffer is full the partition is left out of fetch requests (no
//     memory grows, no other partition waits); it is fetched again from
//     the request after a take. Nobody taking costs nothing but the
//     buffered Records.
//   - Errors: ErrOffsetOutOfRange and ErrMessageTooLarge stop the
//     partition until SetOffset (every Take returns the error until then);
//     errors wrapping ErrFetch are reports (a leader move, a broker lost):
//     the partition keeps being fetched, each report is returned once, and
//     only the latest one is kept. ErrClosed after Close or Fetcher.Close.
type Partition struct {
	f         *Fetcher
	topic     string
	partition int32
	ready     chan struct{}          // cap 1: something to take, or closed
	notify    atomic.Pointer[func()] // Notify's

	mu     sync.Mutex
	offset int64      // next offset to fetch
	seq    uint64     // bumped by SetOffset: a response to an older request is dropped
	size   int32      // bytes asked for this partition (grows for large batches)
	buf    []*Records // cap Config.PartitionBuffer, oldest first
	report error      // a transient error, returned once
	stop   error      // ErrOffsetOutOfRange / ErrMessageTooLarge until SetOffset
	closed bool
	loop   *brokerLoop // the loop fetching it, nil while routed
	// held: left out of a request because buf was full; the take wakes
	// the loop. heldWait is the MaxWait of the latest request made while
	// it was held (see brokerLoop.build).
	held     bool
	heldWait time.Duration
	// starved counts responses that brought nothing though the partition
	// had data (another partition filled the response).
	starved int
	// leaderEpoch is the leader's epoch as the metadata named it when
	// the partition was routed (-1: unknown), sent in fetches (Fetch v9
	// and later); lastEpoch the epoch of the record batch that ends at
	// offset (-1: unknown), sent (Fetch v12) for the broker to check that
	// the log was not truncated below offset.
	leaderEpoch, lastEpoch int32
	// topicID is the topic's id as the metadata named it when the
	// partition was routed (zero: unknown), for requests by id (Fetch v13).
	topicID sarama.Uuid
	// replica is the broker the leader named to fetch from (-1: the
	// leader), until replicaUntil; avoid a replica whose broker failed,
	// not used again until avoidUntil.
	replica, avoid           int32
	replicaUntil, avoidUntil time.Time
}

// Topic returns the partition's topic.
func (p *Partition) Topic() string { return p.topic }

// ID returns the partition's number.
func (p *Partition) ID() int32 { return p.partition }

// Ready returns a channel that receives a value when a Records or an error
// may be ready for Poll (and when the partition or the fetcher closes). A
// receive may be spurious: Poll then returns nothing.
func (p *Partition) Ready() <-chan struct{} { return p.ready }

// Notify makes every later signal of Ready also call f (nil: no call),
// on the goroutine that signals (a broker loop, Close, the Fetcher's
// Close): f must not block. A consumer that waits on no goroutine of its
// own is woken by it.
func (p *Partition) Notify(f func()) {
	if f == nil {
		p.notify.Store(nil)
		return
	}
	p.notify.Store(&f)
}

// Poll takes what is ready without blocking: the buffered Records (nil
// when none) or an error (see the contracts on Partition).
func (p *Partition) Poll() (*Records, error) {
	if p.f.closing.Load() {
		return nil, ErrClosed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return nil, ErrClosed
	case p.stop != nil:
		return nil, p.stop
	case p.report != nil:
		err := p.report
		p.report = nil
		return nil, err
	case len(p.buf) > 0:
		r := p.buf[0]
		n := copy(p.buf, p.buf[1:])
		p.buf[n] = nil
		p.buf = p.buf[:n]
		if p.held {
			p.held = false
			if p.loop != nil {
				p.loop.urge()
			}
		}
		p.heldWait = 0
		return r, nil
	}
	return nil, nil
}

// Take waits for the next Records (or an error) and takes it. It returns
// ctx's error when ctx ends first.
func (p *Partition) Take(ctx context.Context) (*Records, error) {
	for {
		r, err := p.Poll()
		if r != nil || err != nil {
			return r, err
		}
		select {
		case <-p.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.f.t.Dying():
		}
	}
}

// SetOffset makes the partition fetch from offset next: what is buffered is
// dropped, a stop (ErrOffsetOutOfRange, ErrMessageTooLarge) and a pending
// report are cleared, and a response to a request made before is
// dropped. offset must be a real offset (resolve OffsetOldest/Newest with
// the client first).
func (p *Partition) SetOffset(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: SetOffset: offset %d is negative", ErrConfig, offset)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.offset = offset
	p.seq++
	clear(p.buf)
	p.buf = p.buf[:0]
	p.report, p.stop = nil, nil
	p.size = p.f.cfg.PartitionMaxBytes
	p.starved, p.held, p.heldWait = 0, false, 0
	p.lastEpoch = -1
	l := p.loop
	p.mu.Unlock()
	if l != nil {
		l.urge()
	}
	return nil
}

// Close stops fetching the partition and drops what is buffered; a Take
// under way returns ErrClosed. It does not wait for the broker loop (a
// request in flight is answered and its share for this partition
// dropped), and the partition may be added again at once. Idempotent.
func (p *Partition) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.buf, p.report = nil, nil // (cap 0: never fetched again)
	l := p.loop
	p.mu.Unlock()
	p.f.forget(p)
	p.signal()
	if l != nil {
		l.poke() // drops it from its list at the next request
	}
}

// signal marks the partition ready without blocking, and calls Notify's
// function.
func (p *Partition) signal() {
	select {
	case p.ready <- struct{}{}:
	default:
	}
	if f := p.notify.Load(); f != nil {
		(*f)()
	}
}

// setReport keeps err as the pending report (the loop, under no lock).
func (p *Partition) setReport(err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.report = err
	p.mu.Unlock()
	p.signal()
}

package partition

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/tracker"
	"github.com/zkgroup/zkgroup/offsets"
	public "github.com/zkgroup/zkgroup/partition"
)

// A control request (Seek, Pause, Resume) is applied by the run
// between two fetch sessions: the request closes ctlWake, every wait of
// the hand-off path (the fetch loop, the wait for MaxUnacked room, a send,
// a suspension) returns without handing anything more out, the
// partition's Fetch is closed (what it fetched and was not handed out is
// dropped, as at a stop), and the run loop applies the request and
// fetches again from the new position (or not at all while paused).

// seekRequest asks the run to move the fetch position.
type seekRequest struct {
	offset int64     // >= 0, or sarama.OffsetOldest/OffsetNewest
	at     time.Time // when set: the first offset at or after this time
	done   chan error
}

// wake returns the channel closed while a control request waits.
func (m *Manager) wake() <-chan struct{} { return *m.ctlWake.Load() }

// request records a control request and wakes the run. Under
// ctlMu.
func (m *Manager) wakeLocked() {
	if !m.wakeClosed {
		m.wakeClosed = true
		close(*m.ctlWake.Load())
	}
	m.unpark()
}

// applyControl is the run loop's step between fetch sessions: it applies
// a waiting seek to *pos and, while paused, waits. It returns false when
// the manager halts meanwhile.
func (m *Manager) applyControl(pos *int64) bool {
	for {
		m.ctlMu.Lock()
		req := m.seekReq
		m.seekReq = nil
		paused := m.paused
		if m.wakeClosed {
			w := make(chan struct{})
			m.ctlWake.Store(&w)
			m.wakeClosed = false
		}
		wake := *m.ctlWake.Load()
		waiters := m.pauseWaiters
		m.pauseWaiters = nil
		m.ctlMu.Unlock()
		if req != nil {
			req.done <- m.seek(req, pos)
		}
		m.pausedNow.Store(paused)
		for _, w := range waiters {
			close(w) // nothing is handed out from here on
		}
		if !paused {
			return true
		}
		select {
		case <-wake:
		case <-m.halt:
			return false
		}
	}
}

// seek resolves the request's target and restarts tracking there: what
// was handed out and not acked is forgotten (its acks are no-ops), and
// the target is written to the store at once with its Reset when it has
// one (and the fence allows), even below what is committed; otherwise the
// next commit writes it. The run's step only.
func (m *Manager) seek(req *seekRequest, pos *int64) error {
	var target int64
	var err error
	switch {
	case !req.at.IsZero():
		target, err = m.p.Client.GetOffset(m.topic, m.partition, req.at.UnixMilli())
		if err == nil && target < 0 { // no message at or after that time
			target, err = m.p.Client.GetOffset(m.topic, m.partition, sarama.OffsetNewest)
		}
	default:
		target, err = m.resolve(req.offset)
	}
	if err != nil {
		return &Error{Topic: m.topic, Partition: m.partition, Op: public.OpSeek, Err: err}
	}
	// Wait for a commit under way: it must not land after the reset.
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	committed := int64(-1)
	until, leased := m.p.Fence.Lease()
	if r, ok := m.p.Store.(resetter); ok && leased {
		// Stores refuse commits below what they committed: write the new
		// position with Reset, which may move it backwards. Like every
		// write, it must not take effect after the lease.
		ctx, cancel := leaseContext(offsets.WithToken(context.Background(), m.p.Fence.Token()), m.cfg.CommitTimeout, until)
		err := r.Reset(ctx, m.topic, m.partition, target)
		cancel()
		if err != nil {
			return &Error{Topic: m.topic, Partition: m.partition, Op: public.OpSeek, Err: err}
		}
		committed = target
	}
	m.mu.Lock()
	// Batches handed out before are dropped by Pass from now on: the next
	// message handed out is the one at target.
	m.seeks.Add(1)
	m.stir()
	if m.tracker == nil {
		m.tracker = tracker.NewTracker(target)
	} else {
		m.fastOff()
		m.tracker.Reset(target)
	}
	m.abandoned = nil
	m.committed, m.verified = committed, false
	m.mu.Unlock()
	*pos = target
	m.log.Info("seek", "offset", target)
	return nil
}

// resetter is a Store that can move a committed offset backwards
// (offsets.KafkaStore and offsets.ZooKeeperStore are).
type resetter interface {
	Reset(ctx context.Context, topic string, partition int32, next int64) error
}

// stoppedErr is the error of a control request made to a stopped manager.
func (m *Manager) stoppedErr() error {
	return &Error{Topic: m.topic, Partition: m.partition, Op: public.OpControl, Err: ErrStopped}
}

// Seek moves the fetch position of the live partition to offset (>= 0, or
// sarama.OffsetOldest / sarama.OffsetNewest) and returns once it is in
// effect: from then on the partition's next message handed out is the one
// at the new position (an offset out of range is reset by the Initial
// policy, as at start). Messages handed out before and not yet acked are
// forgotten: acking them is a no-op, a drain does not wait for them, and
// they are not delivered again unless the new position is at or below
// them. The new position is committed at once (with the store's Reset,
// even below what was committed; a store without Reset gets it at the
// next commit). A paused partition stays paused. It returns an *Error
// wrapping ErrStopped once the manager stopped, or ctx's error (the seek
// may still happen then). Safe for concurrent use.
func (m *Manager) Seek(ctx context.Context, offset int64) error {
	if offset < 0 && offset != sarama.OffsetOldest && offset != sarama.OffsetNewest {
		return &Error{Topic: m.topic, Partition: m.partition, Op: public.OpSeek,
			Err: fmt.Errorf("%w: offset %d", ErrConfig, offset)}
	}
	return m.request(ctx, &seekRequest{offset: offset, done: make(chan error, 1)})
}

// SeekTime is Seek to the first message whose timestamp is at or after t
// (the log end when there is none), as Kafka's ListOffsets finds it.
func (m *Manager) SeekTime(ctx context.Context, t time.Time) error {
	if t.IsZero() {
		return &Error{Topic: m.topic, Partition: m.partition, Op: public.OpSeek,
			Err: fmt.Errorf("%w: zero time", ErrConfig)}
	}
	return m.request(ctx, &seekRequest{at: t, done: make(chan error, 1)})
}

func (m *Manager) request(ctx context.Context, req *seekRequest) error {
	m.ctlMu.Lock()
	if prev := m.seekReq; prev != nil {
		prev.done <- context.Canceled // superseded
	}
	m.seekReq = req
	m.wakeLocked()
	m.ctlMu.Unlock()
	select {
	case err := <-req.done:
		return err
	case <-m.dying:
		return m.stoppedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Pause stops fetching the partition without giving it up, and returns
// once nothing more is handed out: the message or batch being handed out
// is withdrawn, what was fetched and not handed out is dropped (fetched
// again on Resume) and the fetch session ends. Acks, commits, and the
// drain at a revoke go on as usual. Returns an *Error wrapping ErrStopped
// once the manager stopped, or ctx's error (the partition is paused
// anyway). Safe for concurrent use; idempotent.
func (m *Manager) Pause(ctx context.Context) error {
	done := make(chan struct{})
	m.ctlMu.Lock()
	m.paused = true
	m.pauseWaiters = append(m.pauseWaiters, done)
	m.wakeLocked()
	m.ctlMu.Unlock()
	select {
	case <-done:
		return nil
	case <-m.dying:
		return m.stoppedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Resume fetches a paused partition again, from the first offset not
// handed out (or the position of a seek made while paused). It does not
// wait. Safe for concurrent use; idempotent.
func (m *Manager) Resume() {
	m.ctlMu.Lock()
	m.paused = false
	m.wakeLocked()
	m.ctlMu.Unlock()
}

// Paused reports whether the partition is paused (Pause called, no
// Resume since).
func (m *Manager) Paused() bool {
	m.ctlMu.Lock()
	defer m.ctlMu.Unlock()
	return m.paused
}

// CutDrain ends a drain under way (or one that Stop begins later) at
// once: Stop then commits what is acked and returns an *Error with Op
// "drain" wrapping ErrDrainLate. For a consumer's Close that ran out of
// time: the claim is still held, so the final commit is still safe. Safe
// for concurrent use; idempotent.
func (m *Manager) CutDrain() {
	if m.cut.CompareAndSwap(false, true) {
		select {
		case m.space <- struct{}{}: // wake the drain
		default:
		}
	}
}

// Commit commits this partition's acked watermark now, through the
// Committer (see Committer.Commit), and returns once the store has it or
// ctx ends. It returns an *Error wrapping ErrStopped once the manager
// stopped (its final commit is Stop's).
func (m *Manager) Commit(ctx context.Context) error {
	select {
	case <-m.dying:
		return m.stoppedErr()
	default:
	}
	return m.p.Committer.flush(ctx, m)
}

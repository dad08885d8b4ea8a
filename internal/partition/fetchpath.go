package partition

import (
	"errors"
	"fmt"
	"time"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/retry"
)

// The fetch path: with Params.Fetcher, a Manager reads its partition
// through the consumer's fetch.Fetcher (one fetch loop per broker, records
// taken a response share at a time, no goroutine of its own per
// partition) instead of a sarama PartitionConsumer.

// openFetch returns the partition's fetch.Partition at abs: the prefetched
// one when it starts there, a new one otherwise. Run goroutine only.
func (m *Manager) openFetch(pre *Prefetched, pos, abs int64) (*fetch.Partition, error) {
	if pre != nil && pre.FP != nil {
		if (pos >= 0 && pos == pre.Offset) || (pos < 0 && pos == pre.Initial) {
			m.log.Debug("using the fetch opened before the claim", "offset", pre.Offset)
			return pre.FP, nil
		}
		pre.FP.Close()
	}
	return m.p.Fetcher.Add(m.topic, m.partition, abs)
}

// consumeFetch is consume for the fetch path: it takes fp's records a
// response share at a time into one slab of Messages, tracks them as far
// as MaxUnacked allows and hands them out as batches, until the manager
// halts, a control request comes, or the offset is out of range. Its
// results are consume's. It closes fp.
func (m *Manager) consumeFetch(fp *fetch.Partition) (next int64, outOfRange, stop bool) {
	defer func() {
		fp.Close() // what was fetched and not handed out is dropped
		m.mu.Lock()
		if err := m.tracker.Truncate(next); err != nil {
			m.log.Error("forgetting messages not handed out failed", "offset", next, "error", err)
		}
		m.mu.Unlock()
	}()
	m.mu.Lock()
	next = m.tracker.Committable()
	if last, ok := m.tracker.LastDelivered(); ok {
		next = last + 1
	}
	m.mu.Unlock()
	wake := m.wake()
	for {
		recs, err := fp.Poll()
		switch {
		case errors.Is(err, fetch.ErrOffsetOutOfRange):
			m.fetchErrors.Add(1)
			return next, true, false
		case errors.Is(err, fetch.ErrClosed):
			return next, false, true
		case err != nil: // a report (leader moved, broker lost), or a batch over the size limit
			m.fetchErrors.Add(1)
			m.report("fetch", fmt.Errorf("%w: %w", ErrFetch, err))
			continue
		case recs == nil:
			select {
			case <-fp.Ready():
			case <-m.halt:
				return next, false, true
			case <-wake:
				return next, false, false
			}
			continue
		}
		if recs.HighWaterMark != m.highWatermark.Load() {
			m.highWatermark.Store(recs.HighWaterMark)
		}
		vals := make([]Message, recs.Len())
		n := 0
		for r := range recs.All() {
			if r.Offset < next {
				continue // before the position (a batch fetched whole)
			}
			vals[n] = Message{Topic: recs.Topic, Partition: recs.Partition, Offset: r.Offset,
				Key: r.Key, Value: r.Value, Headers: r.Headers,
				Timestamp: r.Timestamp, BlockTimestamp: r.BlockTimestamp, owner: m}
			n++
		}
		vals = vals[:n]
		for len(vals) > 0 {
			k, ok := m.trackSlab(vals)
			if !ok || !m.handOutSlab(vals[:k], &next) {
				select {
				case <-m.halt:
					return next, false, true
				default: // a control request interrupted the hand-off
					return next, false, false
				}
			}
			vals = vals[k:]
		}
		if recs.NextOffset > next {
			// Offsets with nothing to hand out (a commit marker, an
			// aborted transaction) end the share: they count as passed,
			// so commits reach the log end once everything is acked.
			m.mu.Lock()
			m.tracker.Advance(recs.NextOffset)
			m.mu.Unlock()
			next = recs.NextOffset
		}
		select {
		case <-wake:
			return next, false, false
		default:
		}
	}
}

// trackSlab takes the first k messages of vals for delivery, as many as
// MaxUnacked leaves room for, waiting for acks while there is none; false
// when the manager is stopping or a control request came. An offset the
// tracker refuses (out of order) ends the run there: it and what follows
// are dropped with a logged error.
func (m *Manager) trackSlab(vals []Message) (k int, ok bool) {
	for {
		at := time.Now()
		m.mu.Lock()
		room := min(m.cfg.MaxUnacked-m.tracker.Outstanding(), len(vals))
		for k < room {
			if err := m.tracker.Deliver(vals[k].Offset, at); err != nil {
				m.mu.Unlock()
				m.log.Error("out-of-order message from the fetcher; the rest of its batch is dropped", "offset", vals[k].Offset, "error", err)
				return k, k > 0
			}
			k++
		}
		m.mu.Unlock()
		if k > 0 {
			return k, true
		}
		select {
		case <-m.space:
		case <-m.halt:
			return 0, false
		case <-m.wake():
			return 0, false
		}
	}
}

// handOutSlab hands vals (tracked, in offset order) out as one batch and
// moves *next past them; false when the manager is stopping or a control
// request interrupted it. Run goroutine only.
func (m *Manager) handOutSlab(vals []Message, next *int64) bool {
	ptrs := make([]*Message, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	b := &Batch{Topic: m.topic, Partition: m.partition, Messages: ptrs, owner: m, seeks: m.seeks.Load()}
	if !m.offer(b) {
		return false
	}
	last := vals[len(vals)-1].Offset
	m.lastFetched.Store(last)
	m.delivered.Add(uint64(len(vals)))
	*next = last + 1
	return true
}

// runFetch is run's loop on the fetch path, from the start position pos.
// *pre is set to nil once the prefetched partition was used or closed.
func (m *Manager) runFetch(pos int64, b *retry.Backoff, pre **Prefetched) error {
	for {
		if !m.applyControl(&pos) {
			return m.exitReason()
		}
		abs, err := m.resolve(pos)
		var fp *fetch.Partition
		if err == nil {
			fp, err = m.openFetch(*pre, pos, abs)
			*pre = nil
		}
		if err != nil {
			m.fetchErrors.Add(1)
			m.report("fetch", fmt.Errorf("%w: %w", ErrFetch, err))
			m.log.Warn("starting to fetch failed; retrying", "offset", pos, "error", err)
			if !b.Wait(m.t.Dying(), m.p.Fence.Lost()) {
				return m.exitReason()
			}
			continue
		}
		b.Reset()
		m.ensureTracker(abs)
		next, outOfRange, stop := m.consumeFetch(fp)
		if stop {
			return m.exitReason()
		}
		pos = next
		if outOfRange {
			m.resetPosition(&pos, next)
		}
	}
}

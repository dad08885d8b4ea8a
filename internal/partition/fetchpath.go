package partition

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/fetch"
	public "github.com/zkgroup/zkgroup/partition"
)

// A Manager reads its partition through the consumer's fetch.Fetcher
// (one fetch loop per broker, records taken a response share at a time,
// no goroutine of its own per partition), seen through Fetcher and
// Fetch: what it uses of them and nothing more, so that tests can give
// it a fake.

// Fetcher is what a Manager needs of the consumer's fetch.Fetcher
// (FetcherOf adapts one): Add starts fetching a partition at a real
// offset and returns it (fetch.Fetcher.Add's contract: no network wait;
// an error when the partition is added and not closed, or the fetcher
// closed). Shared by the consumer's Managers: safe for concurrent use.
type Fetcher interface {
	Add(topic string, partition int32, offset int64) (Fetch, error)
}

// Fetch is one partition being fetched, as a *fetch.Partition is (see it
// for the contracts): Poll takes, without blocking, the next Records in
// offset order (nil when none is ready) or an error (fetch.ErrClosed,
// fetch.ErrOffsetOutOfRange and fetch.ErrMessageTooLarge until the
// partition is fetched again; reports wrapping fetch.ErrFetch once
// each); Ready receives a value when Poll may have something (spurious
// receives allowed), and Notify's function is called then too (on the
// goroutine that signals; it must not block); Close stops fetching and
// drops what is buffered.
type Fetch interface {
	Poll() (*fetch.Records, error)
	Ready() <-chan struct{}
	Notify(f func())
	Close()
}

// FetcherOf returns f as a Fetcher.
func FetcherOf(f *fetch.Fetcher) Fetcher { return fetcherOf{f} }

type fetcherOf struct{ f *fetch.Fetcher }

func (a fetcherOf) Add(topic string, partition int32, offset int64) (Fetch, error) {
	p, err := a.f.Add(topic, partition, offset)
	if err != nil {
		return nil, err // not a nil *fetch.Partition in a Fetch
	}
	return p, nil
}

// openFetch returns the partition's Fetch for the position pos (an
// offset, or sarama.OffsetOldest/OffsetNewest) and the offset this
// ownership starts at: pre's when pre covers pos (see Prefetched.Covers;
// the records below pos it fetches are skipped, as those of a batch
// fetched whole are), otherwise a new one at pos resolved, after closing
// pre. It notes whether the Fetch starts below that offset (fetchBelow).
// The run's step only.
func (m *Manager) openFetch(pre *Prefetched, pos int64) (Fetch, int64, error) {
	m.fetchBelow = false
	if pre != nil && pre.FP != nil {
		if pre.Covers(pos) {
			from := pre.Offset
			if pos > from {
				from, m.fetchBelow = pos, true
			}
			m.log.Debug("using the fetch opened before the claim", "opened_at", pre.Offset, "offset", from)
			return pre.FP, from, nil
		}
		m.log.Debug("the fetch opened before the claim does not cover the position; closing it", "opened_at", pre.Offset, "position", pos)
		pre.FP.Close()
	}
	abs, err := m.resolve(pos)
	if err != nil {
		return nil, 0, err
	}
	fp, err := m.p.Fetcher.Add(m.topic, m.partition, abs)
	return fp, abs, err
}

// A fetch session takes fp's records a response share at a time into
// one slab of Messages, tracks them as far as MaxUnacked allows and hands
// them out as batches, until the manager halts, a control request (seek,
// pause) comes, or the offset is out of range. openSession begins it,
// session runs it until it ends or parks, endSession ends it: it closes
// fp (what was fetched and not handed out is dropped) and returns the
// next position to fetch from (the first offset not handed out).
//
// A slab is taken for delivery (tracked) under one lock, as far as
// MaxUnacked allows, rather than message by message: acks out of order
// take the same lock (acks in order take none, see fastack.go), and a lock
// that moves between two cores for every message costs the user's
// goroutine time on every message. What was tracked but
// not handed out when the session ends is truncated. While a slab
// waits for room, the next share is not taken: the fetcher holds at most
// its buffer for the partition and then leaves it out of its requests.
//
// A report (fetch.ErrFetch: a leader moved, a broker was lost) is counted
// and passed on, and fetching goes on. Any other error stops the
// partition (fetch.ErrMessageTooLarge: a batch over the size limit): it is
// counted and passed on once, and nothing more comes until a seek moves
// the position (nothing is skipped silently) or the manager stops.

// openSession begins a fetch session on fp from where the tracker is.
// The run's step only, as are session and endSession.
func (m *Manager) openSession(fp Fetch) {
	m.mu.Lock()
	m.fold()
	next := m.tracker.Committable()
	if last, ok := m.tracker.LastDelivered(); ok {
		next = last + 1
	}
	m.mu.Unlock()
	m.fp, m.next = fp, next
	fp.Notify(m.readyWake)
}

// session runs the fetch session until it ends (outOfRange, or stop:
// true when the manager halts or can fetch no more, false after a control
// request) or parks (parked: nothing to take; see park.go).
func (m *Manager) session() (outOfRange, stop, parked bool) {
	fp := m.fp
	wake := m.wake()
	for {
		if m.p.Turns != nil && !m.turn {
			if ended, stop := m.interrupted(wake); ended {
				return false, stop, false
			}
			if !m.p.Turns.take(m) && m.queued(wake) {
				return false, false, true
			}
			if !m.turn {
				continue // taken out of the queue by a halt or a control request
			}
		}
		recs, err := fp.Poll()
		switch {
		case err != nil:
			if ret, outOfRange, stop := m.pollFailed(m.next, err, wake); ret {
				return outOfRange, stop, false
			}
			continue
		case recs == nil:
			if m.park(fp, wake) {
				return false, false, true
			}
			if ended, stop := m.interrupted(wake); ended {
				return false, stop, false
			}
			continue
		}
		if goOn, halted := m.handOutShare(recs, &m.next); !goOn {
			return false, halted, false
		}
		select {
		case <-wake:
			return false, false, false
		default:
		}
		// Others wait for a turn: the next share after theirs.
		if m.turn && m.p.Turns.live.Load() > 0 && m.p.Turns.pass(m) && m.queued(wake) {
			return false, false, true
		}
	}
}

// interrupted reports whether the session ends now: a halt (stop) or a
// control request (wake) came.
func (m *Manager) interrupted(wake <-chan struct{}) (ended, stop bool) {
	select {
	case <-m.halt:
		return true, true
	case <-wake:
		return true, false
	default:
		return false, false
	}
}

// endSession ends the fetch session: it closes fp and forgets what was
// tracked and not handed out. It returns the next position.
func (m *Manager) endSession() (next int64) {
	next = m.next
	m.fp.Close()
	m.fp.Notify(nil) // a closed Fetch someone still holds keeps no Manager alive
	m.fp = nil
	m.mu.Lock()
	m.fastOff()
	if err := m.tracker.Truncate(next); err != nil {
		m.log.Error("forgetting messages not handed out failed", "offset", next, "error", err)
	}
	m.mu.Unlock()
	return next
}

// handOutShare hands out the messages of recs from *next on, moving *next
// past them; goOn false when the manager halted (halted) or a control
// request interrupted the hand-off.
func (m *Manager) handOutShare(recs *fetch.Records, next *int64) (goOn, halted bool) {
	if recs.HighWaterMark != m.highWatermark.Load() {
		m.highWatermark.Store(recs.HighWaterMark)
	}
	end := recs.NextOffset
	// recs is not used past this point: its record batches (sarama's
	// decoded ones, for legacy message sets, a record struct per message
	// full of pointers) are garbage once copied into the slab, rather
	// than live, and scanned by every collection, while the slab waits
	// for room and for a receiver.
	vals, run := m.slabOf(recs, *next)
	for len(vals) > 0 {
		k, ok := m.trackSlab(vals, run)
		if !ok || !m.handOutSlab(vals[:k], next) {
			select {
			case <-m.halt:
				return false, true
			default: // a control request interrupted the hand-off
				return false, false
			}
		}
		vals = vals[k:]
	}
	if end > *next {
		// Offsets with nothing to hand out (a commit marker, an aborted
		// transaction) end the share: they count as passed, so commits
		// reach the log end once everything is acked.
		m.mu.Lock()
		m.fastOff()
		m.tracker.Advance(end)
		m.mu.Unlock()
		*next = end
	}
	return true, false
}

// pollFailed handles an error of Fetch.Poll at next (session's): ret
// true when the session ends, with outOfRange and stop. An error that
// stops the partition waits here until the manager halts or a control
// request comes.
func (m *Manager) pollFailed(next int64, err error, wake <-chan struct{}) (ret, outOfRange, stop bool) {
	switch {
	case errors.Is(err, fetch.ErrOffsetOutOfRange):
		m.fetchErrors.Add(1)
		if errors.Is(err, fetch.ErrLogTruncated) { // both offsets are in err; the reset follows
			m.log.Warn("partition log truncated below the position", "error", err)
			m.report("fetch", err)
		}
		return true, true, false
	case errors.Is(err, fetch.ErrClosed):
		return true, false, true
	case errors.Is(err, fetch.ErrFetch):
		m.fetchFailed(next, err, false)
		return false, false, false
	}
	m.fetchFailed(next, err, true)
	m.giveTurn()
	select {
	case <-m.halt:
		return true, false, true
	case <-wake:
		return true, false, false
	}
}

// fetchFailed counts and reports a fetch error, and logs one that stops
// the partition.
func (m *Manager) fetchFailed(next int64, err error, stops bool) {
	m.fetchErrors.Add(1)
	m.report(public.OpFetch, fmt.Errorf("%w: %w", ErrFetch, err))
	if stops {
		m.log.Error("fetching stopped; seek past it to go on", "offset", next, "error", err)
	}
}

// slabOf makes the Messages of recs from offset next on: one slab, and
// whether their offsets are a run (each one above the one before, as a
// log without compaction gaps or control records has them); newHandout
// then makes them a batch's. A record batch's records are copied in a
// loop of its own (no call per record: they are most of what a consumer
// reads; the fetcher's own batches through a Cursor), the rest through
// the records' iterator.
func (m *Manager) slabOf(recs *fetch.Records, next int64) (vals []Message, run bool) {
	vals = make([]Message, recs.Len())
	n, run, prev := 0, true, int64(-1)
	topic, partition := recs.Topic, recs.Partition
	segs := recs.Segments()
	for i := range segs {
		if c, ok := segs[i].Cursor(); ok {
			block := segs[i].BlockTimestamp()
			for c.Next() {
				if c.Offset < next {
					continue // before the position (a batch fetched whole)
				}
				if n > 0 && c.Offset != prev+1 {
					run = false
				}
				prev = c.Offset
				setMessage(&vals[n], topic, partition, c.Offset, c.Key, c.Value, c.Headers, c.Timestamp, block)
				n++
			}
			continue
		}
		b, from := segs[i].RecordBatch()
		if b == nil {
			for r := range segs[i].All() {
				if r.Offset < next {
					continue
				}
				if n > 0 && r.Offset != prev+1 {
					run = false
				}
				prev = r.Offset
				setMessage(&vals[n], topic, partition, r.Offset, r.Key, r.Value, r.Headers, r.Timestamp, r.BlockTimestamp)
				n++
			}
			continue
		}
		for _, x := range b.Records[from:] {
			off := b.FirstOffset + x.OffsetDelta
			if off < next {
				continue // before the position (a batch fetched whole)
			}
			if n > 0 && off != prev+1 {
				run = false
			}
			prev = off
			setMessage(&vals[n], topic, partition, off, x.Key, x.Value, x.Headers, fetch.RecordTime(b, x), b.MaxTimestamp)
			n++
		}
	}
	return vals[:n], run
}

// setMessage fills v, zero, field by field, and only with what is not
// zero: a struct assignment is a bulk copy, which while the collector
// marks walks the type's pointer bitmap per message.
func setMessage(v *Message, topic string, partition int32, offset int64, key, value []byte, headers []*sarama.RecordHeader, ts, block time.Time) {
	v.Topic, v.Partition, v.Offset = topic, partition, offset
	if key != nil {
		v.Key = key
	}
	if value != nil {
		v.Value = value
	}
	if headers != nil {
		v.Headers = headers
	}
	v.Timestamp, v.BlockTimestamp = ts, block
}

// trackSlab takes the first k messages of vals for delivery, as many as
// MaxUnacked leaves room for, waiting for acks while there is none; false
// when the manager is stopping or a control request came. An offset the
// tracker refuses (out of order) ends the run there: it and what follows
// are dropped with a logged error. Offsets that are a run (run) are
// tracked in one call.
func (m *Manager) trackSlab(vals []Message, run bool) (k int, ok bool) {
	for {
		at := time.Now()
		m.mu.Lock()
		m.stir()
		m.fold()
		room := min(m.cfg.MaxUnacked-m.tracker.Outstanding(), len(vals))
		if run && room > 0 && m.tracker.DeliverRun(vals[0].Offset, room, at) == nil {
			k = room
			m.fastDelivered(vals[0].Offset, vals[0].Offset+int64(room))
		}
		if k < room {
			m.fastOff()
		}
		for k < room { // one by one: not a run, or refused (the error names the offset)
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
		m.giveTurn() // a wait for acks, not for the receiver
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
// request interrupted it. The run's step only.
func (m *Manager) handOutSlab(vals []Message, next *int64) bool {
	if !m.offer(m.newHandout(vals)) {
		return false
	}
	last := vals[len(vals)-1].Offset
	m.lastFetched.Store(last)
	m.delivered.Add(uint64(len(vals)))
	*next = last + 1
	return true
}

package tracker

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// MaxOffset is the largest offset [Tracker.Deliver] accepts. It is one below
// math.MaxInt64 so that "last delivered + 1" is always representable.
const MaxOffset int64 = math.MaxInt64 - 1

// Sentinel errors returned (wrapped) by [Tracker.Deliver]. They are plain
// values and safe for concurrent use.
var (
	// ErrOutOfOrder reports an offset that is below the start offset or not
	// above the last delivered offset.
	ErrOutOfOrder = errors.New("tracker: offset out of order")
	// ErrAboveMax reports an offset above MaxOffset.
	ErrAboveMax = errors.New("tracker: offset above MaxOffset")
)

// DeliverError describes a delivery rejected by [Tracker.Deliver]. It wraps
// ErrOutOfOrder or ErrAboveMax. It is an immutable value once returned
// and safe for concurrent reads.
type DeliverError struct {
	Offset  int64 // the rejected offset
	Start   int64 // the tracker's start offset
	Last    int64 // the last delivered offset; meaningful only if HasLast
	HasLast bool  // whether anything had been delivered
	Err     error // ErrOutOfOrder or ErrAboveMax
}

// Error names the rejected offset and the bound it violated.
func (e *DeliverError) Error() string {
	switch {
	case errors.Is(e.Err, ErrAboveMax):
		return fmt.Sprintf("%v: deliver offset %d above max offset %d", e.Err, e.Offset, MaxOffset)
	case e.HasLast:
		return fmt.Sprintf("%v: deliver offset %d not above last delivered offset %d", e.Err, e.Offset, e.Last)
	default:
		return fmt.Sprintf("%v: deliver offset %d below start offset %d", e.Err, e.Offset, e.Start)
	}
}

// Unwrap returns the sentinel error (ErrOutOfOrder or ErrAboveMax).
func (e *DeliverError) Unwrap() error { return e.Err }

// AckResult is the outcome of [Tracker.Ack]. The zero value is not a valid
// result. It is a plain value, safe for concurrent use.
type AckResult int

// Possible results of [Tracker.Ack].
const (
	// AckOK: the offset was delivered and pending; it is now acked.
	AckOK AckResult = iota + 1
	// AckDuplicate: the offset was already acked and is still held in memory
	// (some lower offset is still pending).
	AckDuplicate
	// AckUnknown: the offset was never delivered (gap, never seen, beyond the
	// last delivered offset), or is below the committable watermark (already
	// acked and released), or was forgotten by Reset.
	AckUnknown
)

// String returns "ok", "duplicate", "unknown" or "AckResult(n)".
func (r AckResult) String() string {
	switch r {
	case AckOK:
		return "ok"
	case AckDuplicate:
		return "duplicate"
	case AckUnknown:
		return "unknown"
	default:
		return "AckResult(" + strconv.Itoa(int(r)) + ")"
	}
}

// minCapacity is the ring size allocated on first growth.
const minCapacity = 16

// oversized is how many times larger than the entries it held at most
// since it last emptied the ring must be to be shrunk when it empties.
const oversized = 4

// Tracker tracks delivered and acked offsets of a single partition and
// computes the committable offset.
//
// Tracker is not safe for concurrent use; its owner (the partition manager)
// serialises calls. No method blocks. The zero value is a Tracker starting at
// offset 0.
//
// Invariants: the ring holds entries in strictly increasing offset order; if
// the ring is non-empty its head entry is unacked; pending counts the unacked
// entries in the ring; the acked bit of a slot not holding an entry is 0.
//
// The ring is three parallel arrays rather than one of structs: Ack reads
// offsets and writes acked bits only, so that when one goroutine delivers
// and another acks (under the owner's lock), the memory they share is 8
// bytes per message plus a bit, not a whole entry with its time.
//
// Memory: an entry costs 17 bytes (offset, time, bit; the time is kept as
// nanoseconds after the first delivery's, so that no array holds a pointer
// for the garbage collector to scan or Deliver to write), so a ring grown
// for a backlog of 10,000 outstanding messages holds 16,384 slots (about
// 280 KB) and, kept, would make every partition that once caught up a backlog
// that expensive. The ring therefore grows on demand (from minCapacity,
// doubling) and shrinks back: when it empties while much larger than the
// most it held since it last emptied (oversized times), it is dropped and
// the next Deliver grows a new one; and [Tracker.Trim] releases it while
// nothing is held (the partition manager calls it for idle partitions).
type Tracker struct {
	offs      []int64   // ring of offsets; len is 0 or a power of two
	ats       []int64   // delivery time of each slot's entry: nanoseconds after base
	base      time.Time // the first delivery's time since NewTracker or Reset (hasBase)
	hasBase   bool
	acked     []uint64 // one bit per slot
	head      int      // slot of the oldest entry
	n         int      // number of entries in the ring
	peak      int      // most entries held since the ring last emptied
	pending   int      // number of unacked entries in the ring
	start     int64    // start offset set by NewTracker or Reset
	next      int64    // smallest offset Deliver accepts: start or last delivered + 1
	delivered bool     // whether anything was delivered since NewTracker/Reset
}

// NewTracker returns an empty Tracker whose consumption starts at start, the
// offset of the first message that will be delivered. start must be a real
// offset, not one of sarama's negative OffsetNewest/OffsetOldest sentinels;
// a negative start is treated as 0. The result is not safe for concurrent
// use.
func NewTracker(start int64) *Tracker {
	t := &Tracker{}
	t.Reset(start)
	return t
}

// Reset forgets every delivered and acked offset and restarts the tracker at
// start, as NewTracker would (negative start is treated as 0). It keeps the
// ring's memory for reuse. Reset is the only operation that may move the
// committable offset backwards (e.g. after an out-of-range reset). Not safe
// for concurrent use; never blocks.
func (t *Tracker) Reset(start int64) {
	if start < 0 {
		start = 0
	}
	clear(t.acked)
	t.base, t.hasBase = time.Time{}, false
	t.head, t.n, t.pending, t.peak = 0, 0, 0, 0
	t.start, t.next, t.delivered = start, start, false
}

// Trim releases the ring's memory if nothing is held (Outstanding() is 0)
// and reports whether it did; the next Deliver allocates a small ring
// again. Use it for a partition that has gone idle. Nothing else changes.
// Not safe for concurrent use; never blocks.
func (t *Tracker) Trim() bool {
	if t.n != 0 || t.offs == nil {
		return false
	}
	t.offs, t.ats, t.acked = nil, nil, nil
	t.head, t.peak = 0, 0
	return true
}

// Capacity returns the number of entries the ring holds before it must
// grow (0 when it holds no memory). O(1); not safe for concurrent use;
// never blocks.
func (t *Tracker) Capacity() int { return len(t.offs) }

// emptied is called when the ring has just become empty: it rewinds the
// head and, if the ring is oversized for what it held since it last
// emptied, drops it (so a ring grown for an old backlog does not stay at
// that size); Deliver grows a new one, only as far as needed. It never
// allocates: Ack calls it.
func (t *Tracker) emptied() {
	t.head = 0
	fit := minCapacity
	for fit < t.peak {
		fit *= 2
	}
	t.peak = 0
	if len(t.offs) >= oversized*fit {
		t.offs, t.ats, t.acked = nil, nil, nil
	}
}

// Deliver records that the message at offset was handed to the application at
// time at. offset must be >= the start offset, greater than the last delivered
// offset, and <= MaxOffset. Otherwise Deliver returns a *DeliverError wrapping
// ErrOutOfOrder or ErrAboveMax and changes nothing. Amortised O(1); does
// not allocate unless the ring must grow. Not safe for concurrent use; never
// blocks.
func (t *Tracker) Deliver(offset int64, at time.Time) error {
	return t.DeliverRun(offset, 1, at)
}

// DeliverRun records that the n messages at offsets first, first+1, ...,
// first+n-1 were handed to the application at time at: what n calls of
// Deliver would record, in one call and without an error check per
// offset. first must be >= the start offset and greater than the last
// delivered offset, and first+n-1 <= MaxOffset; otherwise DeliverRun
// returns a *DeliverError (its Offset is first) wrapping ErrOutOfOrder
// or ErrAboveMax and changes nothing. n < 1 changes nothing. O(n); does
// not allocate unless the ring must grow. Not safe for concurrent use;
// never blocks.
func (t *Tracker) DeliverRun(first int64, n int, at time.Time) error {
	if n < 1 {
		return nil
	}
	if first > MaxOffset {
		return t.deliverError(first, ErrAboveMax)
	}
	if first < t.next {
		return t.deliverError(first, ErrOutOfOrder)
	}
	if int64(n-1) > MaxOffset-first { // first >= t.next >= 0 here: no overflow
		return t.deliverError(first, ErrAboveMax)
	}
	if t.n+n > len(t.offs) {
		t.grow(t.n + n)
	}
	if !t.hasBase {
		t.base, t.hasBase = at, true
	}
	d := int64(at.Sub(t.base))
	mask := len(t.offs) - 1
	i := (t.head + t.n) & mask
	for k := range int64(n) {
		t.offs[i], t.ats[i] = first+k, d
		i = (i + 1) & mask
	}
	t.n += n
	t.peak = max(t.peak, t.n)
	t.pending += n
	t.next = first + int64(n)
	t.delivered = true
	return nil
}

func (t *Tracker) deliverError(offset int64, err error) error {
	e := &DeliverError{Offset: offset, Start: t.start, HasLast: t.delivered, Err: err}
	if t.delivered {
		e.Last = t.next - 1
	}
	return e
}

// Truncate forgets the delivered offsets at or above offset, as if they
// had never been delivered: they are no longer pending, and Deliver accepts
// offsets from offset on. It is for messages taken for delivery that were
// never handed to the application. Committable is unchanged (nothing below
// offset goes), and afterwards LastDelivered reports offset-1 (ok when
// offset is above the start offset): the tracker treats every offset below
// offset as passed. offset must be at least Committable(); otherwise
// Truncate returns a *DeliverError wrapping ErrOutOfOrder and changes
// nothing. An offset above the last delivered one changes nothing.
// O(log n + truncated entries); never allocates. Not safe for concurrent
// use; never blocks.
func (t *Tracker) Truncate(offset int64) error {
	if offset < t.Committable() {
		return t.deliverError(offset, ErrOutOfOrder)
	}
	if offset >= t.next {
		return nil
	}
	keep := t.n - t.HeldAbove(offset-1)
	mask := len(t.offs) - 1
	for k := keep; k < t.n; k++ {
		i := (t.head + k) & mask
		if t.isAcked(i) {
			t.setAcked(i, false)
		} else {
			t.pending--
		}
	}
	t.n = keep
	if t.n == 0 {
		t.emptied()
	}
	t.next = offset
	t.delivered = offset > t.start
	return nil
}

// Advance records that the offsets from the last delivered one (or the
// start) up to offset-1 hold nothing to deliver: the broker's log has only
// control records, records of aborted transactions or empty batches there.
// They count as passed: Deliver accepts offsets from offset on,
// LastDelivered reports offset-1, and Committable reaches offset once
// everything delivered is acked, so that a group's committed offset can
// pass a transaction's commit marker at the end of the log. An offset not
// above the last delivered one changes nothing. O(1); not safe for
// concurrent use; never blocks.
func (t *Tracker) Advance(offset int64) {
	if offset <= t.next || offset > MaxOffset+1 {
		return
	}
	t.next = offset
	t.delivered = true
}

// HeldAbove returns how many delivered offsets above offset are held (acked
// or not). O(log n); not safe for concurrent use; never blocks.
func (t *Tracker) HeldAbove(offset int64) int {
	if t.n == 0 || offset >= t.next-1 {
		return 0
	}
	mask := len(t.offs) - 1
	lo, hi := 0, t.n // first logical index whose offset is above offset
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if t.offs[(t.head+mid)&mask] <= offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return t.n - lo
}

// grow doubles the ring (or allocates the initial one) as many times as
// it takes to hold need entries, in one allocation, unwrapping the
// entries so the oldest is at index 0.
func (t *Tracker) grow(need int) {
	size := max(2*len(t.offs), minCapacity)
	for size < need {
		size *= 2
	}
	offs, ats, acked := make([]int64, size), make([]int64, size), make([]uint64, (size+63)/64)
	mask := len(t.offs) - 1
	for k := 0; k < t.n; k++ {
		i := (t.head + k) & mask
		offs[k], ats[k] = t.offs[i], t.ats[i]
		if t.isAcked(i) {
			acked[k/64] |= 1 << (k % 64)
		}
	}
	t.offs, t.ats, t.acked, t.head = offs, ats, acked, 0
}

func (t *Tracker) isAcked(i int) bool { return t.acked[uint(i)/64]&(1<<(uint(i)%64)) != 0 }

func (t *Tracker) setAcked(i int, v bool) {
	if v {
		t.acked[uint(i)/64] |= 1 << (uint(i) % 64)
	} else {
		t.acked[uint(i)/64] &^= 1 << (uint(i) % 64)
	}
}

// Ack marks the delivered message at offset as processed and, if it was the
// oldest pending one, advances the committable offset past every acked entry.
// It returns AckOK, AckDuplicate or AckUnknown (see their docs); AckUnknown
// and AckDuplicate change nothing. O(log n) for n outstanding entries; never
// allocates or panics. Not safe for concurrent use; never blocks.
func (t *Tracker) Ack(offset int64) AckResult {
	if t.n == 0 || offset < t.offs[t.head] || offset >= t.next {
		return AckUnknown
	}
	i, ok := t.find(offset)
	if !ok {
		return AckUnknown
	}
	if t.isAcked(i) {
		return AckDuplicate
	}
	t.setAcked(i, true)
	t.pending--
	t.release()
	return AckOK
}

// AckBelow acks every delivered offset below offset that is pending, as
// Ack would one by one in increasing order, and returns how many it
// acked. O(number of entries below offset); never allocates. Not safe for
// concurrent use; never blocks.
func (t *Tracker) AckBelow(offset int64) int {
	if t.n == 0 || t.offs[t.head] >= offset {
		return 0
	}
	mask := len(t.offs) - 1
	acked := 0
	// Every entry below offset is at the head and becomes acked, so it is
	// released at once; release then drops the acked ones that follow.
	for t.n > 0 && t.offs[t.head] < offset {
		if t.isAcked(t.head) {
			t.setAcked(t.head, false)
		} else {
			acked++
		}
		t.head = (t.head + 1) & mask
		t.n--
	}
	t.pending -= acked
	t.release() // (calls emptied if the ring is now empty)
	return acked
}

// find returns the slot of the entry holding offset, by binary search
// over the ring's logical positions. The ring must be non-empty.
func (t *Tracker) find(offset int64) (int, bool) {
	if t.offs[t.head] == offset { // in-order acks hit the head
		return t.head, true
	}
	mask := len(t.offs) - 1
	lo, hi := 0, t.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if t.offs[(t.head+mid)&mask] < offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == t.n {
		return 0, false
	}
	i := (t.head + lo) & mask
	return i, t.offs[i] == offset
}

// release drops acked entries from the head of the ring, restoring the
// invariant that a non-empty ring starts with an unacked entry.
func (t *Tracker) release() {
	mask := len(t.offs) - 1
	for t.n > 0 && t.isAcked(t.head) {
		t.setAcked(t.head, false)
		t.head = (t.head + 1) & mask
		t.n--
	}
	if t.n == 0 {
		t.emptied()
	}
}

// Committable returns the offset to commit, in Kafka's "next offset to read"
// convention: the lowest delivered-but-unacked offset; or, when everything
// delivered is acked, the last delivered offset + 1; or, before any delivery,
// the start offset. It never decreases except across Reset. O(1); not safe for
// concurrent use; never blocks.
func (t *Tracker) Committable() int64 {
	if t.n > 0 {
		return t.offs[t.head]
	}
	return t.next
}

// UnackedRun reports whether what is held is one run of unacked offsets:
// every offset from Committable() to LastDelivered() held and none of them
// acked (ok also when nothing is held; from is then Committable()). It
// returns from, Committable(). O(1); not safe for concurrent use; never
// blocks.
func (t *Tracker) UnackedRun() (from int64, ok bool) {
	if t.n == 0 {
		return t.next, true
	}
	from = t.offs[t.head]
	return from, t.pending == t.n && from+int64(t.n) == t.next
}

// Pending returns the number of delivered messages not yet acked. O(1); not
// safe for concurrent use; never blocks.
func (t *Tracker) Pending() int { return t.pending }

// Outstanding returns the number of entries held in memory: pending ones plus
// acked ones above the committable offset. Use it for backpressure. O(1); not
// safe for concurrent use; never blocks.
func (t *Tracker) Outstanding() int { return t.n }

// OldestPending returns the lowest delivered-but-unacked offset and the time
// it was delivered; ok is false when nothing is pending. O(1); not safe for
// concurrent use; never blocks.
func (t *Tracker) OldestPending() (offset int64, at time.Time, ok bool) {
	if t.n == 0 {
		return 0, time.Time{}, false
	}
	return t.offs[t.head], t.base.Add(time.Duration(t.ats[t.head])), true
}

// LastDelivered returns the highest offset delivered since NewTracker or the
// last Reset; ok is false if nothing was delivered. O(1); not safe for
// concurrent use; never blocks.
func (t *Tracker) LastDelivered() (offset int64, ok bool) {
	if !t.delivered {
		return 0, false
	}
	return t.next - 1, true
}

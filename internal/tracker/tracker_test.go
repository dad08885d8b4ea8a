package tracker

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// at returns a distinct, deterministic delivery time for offset o.
func at(o int64) time.Time { return t0.Add(time.Duration(o%1_000_000) * time.Millisecond) }

type opKind int

const (
	opDeliver opKind = iota
	opAck
	opReset
)

// step is one call in a table test, with the expected outcome and the
// committable offset expected right after it.
type step struct {
	op         opKind
	off        int64
	wantErr    error     // for opDeliver
	wantAck    AckResult // for opAck
	wantCommit int64
}

func deliver(off, commit int64) step { return step{op: opDeliver, off: off, wantCommit: commit} }
func deliverErr(off int64, err error, commit int64) step {
	return step{op: opDeliver, off: off, wantErr: err, wantCommit: commit}
}
func ack(off int64, r AckResult, commit int64) step {
	return step{op: opAck, off: off, wantAck: r, wantCommit: commit}
}
func reset(start int64) step { return step{op: opReset, off: start, wantCommit: max(start, 0)} }

func TestTrackerTable(t *testing.T) {
	type final struct {
		pending, outstanding int
		last                 int64
		hasLast              bool
		oldest               int64
		hasOldest            bool
	}
	tests := []struct {
		name  string
		start int64
		steps []step
		want  final
	}{
		{name: "empty start 0", start: 0, want: final{}},
		{name: "empty start 42", start: 42, steps: []step{ack(42, AckUnknown, 42)}, want: final{}},
		{name: "negative start clamps to 0", start: -1, steps: []step{deliverErr(-1, ErrOutOfOrder, 0), deliver(0, 0)},
			want: final{pending: 1, outstanding: 1, last: 0, hasLast: true, oldest: 0, hasOldest: true}},
		{name: "in order", start: 0, steps: []step{
			deliver(0, 0), deliver(1, 0), deliver(2, 0),
			ack(0, AckOK, 1), ack(1, AckOK, 2), ack(2, AckOK, 3),
		}, want: final{last: 2, hasLast: true}},
		{name: "out of order", start: 0, steps: []step{
			deliver(0, 0), deliver(1, 0), deliver(2, 0), deliver(3, 0), deliver(4, 0),
			ack(3, AckOK, 0), ack(1, AckOK, 0), ack(0, AckOK, 2), ack(2, AckOK, 4),
		}, want: final{pending: 1, outstanding: 1, last: 4, hasLast: true, oldest: 4, hasOldest: true}},
		{name: "reverse order", start: 7, steps: []step{
			deliver(7, 7), deliver(8, 7), deliver(9, 7),
			ack(9, AckOK, 7), ack(8, AckOK, 7), ack(7, AckOK, 10),
		}, want: final{last: 9, hasLast: true}},
		{name: "gaps", start: 10, steps: []step{
			deliver(12, 12), deliver(15, 12), deliver(20, 12),
			ack(13, AckUnknown, 12), ack(15, AckOK, 12), ack(12, AckOK, 20),
			ack(19, AckUnknown, 20), ack(20, AckOK, 21), deliver(30, 30),
		}, want: final{pending: 1, outstanding: 1, last: 30, hasLast: true, oldest: 30, hasOldest: true}},
		{name: "first delivery above start", start: 5, steps: []step{
			ack(5, AckUnknown, 5), deliver(9, 9), ack(9, AckOK, 10),
		}, want: final{last: 9, hasLast: true}},
		{name: "duplicate ack", start: 0, steps: []step{
			deliver(0, 0), deliver(1, 0), deliver(2, 0),
			ack(1, AckOK, 0), ack(1, AckDuplicate, 0), ack(0, AckOK, 2),
			ack(0, AckUnknown, 2), ack(1, AckUnknown, 2), ack(2, AckOK, 3), ack(2, AckUnknown, 3),
		}, want: final{last: 2, hasLast: true}},
		{name: "ack unknown future and below watermark", start: 5, steps: []step{
			ack(5, AckUnknown, 5), deliver(5, 5), ack(6, AckUnknown, 5), ack(4, AckUnknown, 5),
			ack(-1, AckUnknown, 5), ack(math.MaxInt64, AckUnknown, 5), ack(math.MinInt64, AckUnknown, 5),
			ack(5, AckOK, 6), ack(5, AckUnknown, 6), ack(6, AckUnknown, 6),
		}, want: final{last: 5, hasLast: true}},
		{name: "ack after reset", start: 0, steps: []step{
			deliver(0, 0), deliver(1, 0), deliver(2, 0), ack(0, AckOK, 1),
			reset(100), ack(1, AckUnknown, 100), ack(2, AckUnknown, 100), ack(100, AckUnknown, 100),
			deliverErr(50, ErrOutOfOrder, 100), deliver(100, 100), ack(100, AckOK, 101),
		}, want: final{last: 100, hasLast: true}},
		{name: "reset backwards", start: 100, steps: []step{
			deliver(100, 100), deliver(101, 100), ack(100, AckOK, 101),
			reset(5), ack(101, AckUnknown, 5), deliver(5, 5), deliver(6, 5),
		}, want: final{pending: 2, outstanding: 2, last: 6, hasLast: true, oldest: 5, hasOldest: true}},
		{name: "reset negative", start: 3, steps: []step{deliver(3, 3), reset(-2), deliver(0, 0)},
			want: final{pending: 1, outstanding: 1, last: 0, hasLast: true, oldest: 0, hasOldest: true}},
		{name: "deliver errors change nothing", start: 10, steps: []step{
			deliverErr(9, ErrOutOfOrder, 10), deliverErr(-5, ErrOutOfOrder, 10), deliver(10, 10), deliver(12, 10),
			deliverErr(12, ErrOutOfOrder, 10), deliverErr(11, ErrOutOfOrder, 10), deliverErr(math.MinInt64, ErrOutOfOrder, 10),
			deliverErr(math.MaxInt64, ErrAboveMax, 10), ack(10, AckOK, 12),
		}, want: final{pending: 1, outstanding: 1, last: 12, hasLast: true, oldest: 12, hasOldest: true}},
		{name: "large offsets", start: MaxOffset - 2, steps: []step{
			deliver(MaxOffset-2, MaxOffset-2), deliver(MaxOffset, MaxOffset-2),
			deliverErr(math.MaxInt64, ErrAboveMax, MaxOffset-2),
			ack(MaxOffset-1, AckUnknown, MaxOffset-2), ack(MaxOffset, AckOK, MaxOffset-2),
			ack(MaxOffset-2, AckOK, math.MaxInt64), ack(MaxOffset, AckUnknown, math.MaxInt64),
			deliverErr(MaxOffset, ErrOutOfOrder, math.MaxInt64),
		}, want: final{last: MaxOffset, hasLast: true}},
		{name: "start at max", start: math.MaxInt64, steps: []step{
			deliverErr(math.MaxInt64, ErrAboveMax, math.MaxInt64), deliverErr(MaxOffset, ErrOutOfOrder, math.MaxInt64),
		}, want: final{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(tc.start)
			for i, s := range tc.steps {
				switch s.op {
				case opDeliver:
					err := tr.Deliver(s.off, at(s.off))
					if s.wantErr == nil && err != nil {
						t.Fatalf("step %d: Deliver(%d) = %v, want nil", i, s.off, err)
					}
					if s.wantErr != nil && !errors.Is(err, s.wantErr) {
						t.Fatalf("step %d: Deliver(%d) = %v, want %v", i, s.off, err, s.wantErr)
					}
				case opAck:
					if got := tr.Ack(s.off); got != s.wantAck {
						t.Fatalf("step %d: Ack(%d) = %v, want %v", i, s.off, got, s.wantAck)
					}
				case opReset:
					tr.Reset(s.off)
				}
				if got := tr.Committable(); got != s.wantCommit {
					t.Fatalf("step %d: Committable() = %d, want %d", i, got, s.wantCommit)
				}
			}
			if got := tr.Pending(); got != tc.want.pending {
				t.Errorf("Pending() = %d, want %d", got, tc.want.pending)
			}
			if got := tr.Outstanding(); got != tc.want.outstanding {
				t.Errorf("Outstanding() = %d, want %d", got, tc.want.outstanding)
			}
			last, ok := tr.LastDelivered()
			if last != tc.want.last || ok != tc.want.hasLast {
				t.Errorf("LastDelivered() = %d, %v, want %d, %v", last, ok, tc.want.last, tc.want.hasLast)
			}
			old, oldAt, ok := tr.OldestPending()
			if old != tc.want.oldest || ok != tc.want.hasOldest {
				t.Errorf("OldestPending() = %d, %v, want %d, %v", old, ok, tc.want.oldest, tc.want.hasOldest)
			}
			if ok && !oldAt.Equal(at(old)) {
				t.Errorf("OldestPending() time = %v, want %v", oldAt, at(old))
			}
			if !ok && !oldAt.IsZero() {
				t.Errorf("OldestPending() time = %v with ok=false, want zero", oldAt)
			}
		})
	}
}

func TestZeroValueTracker(t *testing.T) {
	var tr Tracker
	if got := tr.Committable(); got != 0 {
		t.Fatalf("zero Tracker Committable() = %d, want 0", got)
	}
	if got := tr.Ack(0); got != AckUnknown {
		t.Fatalf("zero Tracker Ack(0) = %v, want unknown", got)
	}
	if err := tr.Deliver(0, t0); err != nil {
		t.Fatalf("zero Tracker Deliver(0) = %v", err)
	}
	if got := tr.Ack(0); got != AckOK {
		t.Fatalf("Ack(0) = %v, want ok", got)
	}
	if got := tr.Committable(); got != 1 {
		t.Fatalf("Committable() = %d, want 1", got)
	}
}

func TestDeliverError(t *testing.T) {
	tests := []struct {
		name     string
		start    int64
		deliver  []int64
		off      int64
		sentinel error
		want     DeliverError
		contains []string
	}{
		{name: "below start", start: 10, off: 3, sentinel: ErrOutOfOrder,
			want:     DeliverError{Offset: 3, Start: 10, Err: ErrOutOfOrder},
			contains: []string{"tracker:", "offset 3", "start offset 10"}},
		{name: "not above last", start: 0, deliver: []int64{4, 7}, off: 5, sentinel: ErrOutOfOrder,
			want:     DeliverError{Offset: 5, Start: 0, Last: 7, HasLast: true, Err: ErrOutOfOrder},
			contains: []string{"tracker:", "offset 5", "last delivered offset 7"}},
		{name: "repeat last", start: 0, deliver: []int64{4}, off: 4, sentinel: ErrOutOfOrder,
			want:     DeliverError{Offset: 4, Start: 0, Last: 4, HasLast: true, Err: ErrOutOfOrder},
			contains: []string{"offset 4", "last delivered offset 4"}},
		{name: "above max", start: 0, deliver: []int64{1}, off: math.MaxInt64, sentinel: ErrAboveMax,
			want:     DeliverError{Offset: math.MaxInt64, Start: 0, Last: 1, HasLast: true, Err: ErrAboveMax},
			contains: []string{"offset above MaxOffset", "9223372036854775807", "max offset 9223372036854775806"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(tc.start)
			for _, o := range tc.deliver {
				if err := tr.Deliver(o, t0); err != nil {
					t.Fatalf("Deliver(%d): %v", o, err)
				}
			}
			err := tr.Deliver(tc.off, t0)
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("Deliver(%d) = %v, want %v", tc.off, err, tc.sentinel)
			}
			var de *DeliverError
			if !errors.As(err, &de) {
				t.Fatalf("Deliver(%d) error %T is not *DeliverError", tc.off, err)
			}
			if *de != tc.want {
				t.Errorf("DeliverError = %+v, want %+v", *de, tc.want)
			}
			msg := err.Error()
			for _, s := range tc.contains {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not contain %q", msg, s)
				}
			}
		})
	}
}

func TestAckResultString(t *testing.T) {
	tests := []struct {
		r    AckResult
		want string
	}{
		{AckOK, "ok"}, {AckDuplicate, "duplicate"}, {AckUnknown, "unknown"},
		{0, "AckResult(0)"}, {-3, "AckResult(-3)"}, {99, "AckResult(99)"},
	}
	for _, tc := range tests {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("AckResult(%d).String() = %q, want %q", int(tc.r), got, tc.want)
		}
	}
}

// TestRingWrapAndGrow forces the ring to wrap around and then grow while
// wrapped, and checks every entry survives in order.
func TestRingWrapAndGrow(t *testing.T) {
	tr := NewTracker(0)
	var o int64
	for ; o < minCapacity; o++ {
		if err := tr.Deliver(o, at(o)); err != nil {
			t.Fatal(err)
		}
	}
	for a := int64(0); a < 10; a++ { // head moves to index 10
		if r := tr.Ack(a); r != AckOK {
			t.Fatalf("Ack(%d) = %v", a, r)
		}
	}
	for ; o < 5*minCapacity; o += 2 { // wraps, then grows twice, with gaps
		if err := tr.Deliver(o, at(o)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := len(tr.offs), 4*minCapacity; got != want {
		t.Fatalf("ring size %d, want %d", got, want)
	}
	// Ack the newest first, then the rest downwards; committable must stay
	// at 10 until offset 10 itself is acked.
	var offs []int64
	for a := int64(10); a < minCapacity; a++ {
		offs = append(offs, a)
	}
	for a := int64(minCapacity); a < 5*minCapacity; a += 2 {
		offs = append(offs, a)
	}
	for i := len(offs) - 1; i >= 0; i-- {
		if r := tr.Ack(offs[i]); r != AckOK {
			t.Fatalf("Ack(%d) = %v", offs[i], r)
		}
		want := int64(10)
		if i == 0 {
			want = offs[len(offs)-1] + 1
		}
		if got := tr.Committable(); got != want {
			t.Fatalf("after Ack(%d): Committable() = %d, want %d", offs[i], got, want)
		}
	}
	if tr.Outstanding() != 0 || tr.Pending() != 0 {
		t.Fatalf("Outstanding=%d Pending=%d, want 0 0", tr.Outstanding(), tr.Pending())
	}
}

// TestSteadyStateZeroAllocs checks Deliver+Ack do not allocate once the ring
// is large enough.
func TestSteadyStateZeroAllocs(t *testing.T) {
	tr := NewTracker(0)
	var next int64
	const window = 64
	for ; next < window; next++ {
		if err := tr.Deliver(next, t0); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := tr.Deliver(next, t0); err != nil {
			t.Fatal(err)
		}
		if r := tr.Ack(next - window + 1); r != AckOK { // out of order
			t.Fatalf("Ack(%d) = %v", next-window+1, r)
		}
		if r := tr.Ack(next - window); r != AckOK {
			t.Fatalf("Ack(%d) = %v", next-window, r)
		}
		next++
		if err := tr.Deliver(next, t0); err != nil {
			t.Fatal(err)
		}
		next++
	})
	if allocs != 0 {
		t.Fatalf("Deliver+Ack allocated %.1f times per run, want 0", allocs)
	}
}

// refModel is a deliberately naive reference implementation: every
// delivered offset is kept forever and every query is a linear scan.
type refModel struct {
	start int64
	floor int64 // set by truncate: offsets below it count as passed

	delivered []int64 // in delivery order (strictly increasing)
	acked     map[int64]bool
	at        map[int64]time.Time
}

func newRefModel(start int64) *refModel {
	r := &refModel{}
	r.reset(start)
	return r
}

func (r *refModel) reset(start int64) {
	if start < 0 {
		start = 0
	}
	*r = refModel{start: start, floor: start, acked: map[int64]bool{}, at: map[int64]time.Time{}}
}

func (r *refModel) last() (int64, bool) {
	if len(r.delivered) == 0 {
		if r.floor > r.start {
			return r.floor - 1, true
		}
		return 0, false
	}
	return max(r.delivered[len(r.delivered)-1], r.floor-1), true
}

// truncate drops the delivered offsets >= off; false when off is below the
// committable offset (nothing changes then).
func (r *refModel) truncate(off int64) bool {
	if off < r.committable() {
		return false
	}
	next := r.start
	if l, ok := r.last(); ok {
		next = l + 1
	}
	if off >= next {
		return true
	}
	keep := r.delivered[:0]
	for _, o := range r.delivered {
		if o < off {
			keep = append(keep, o)
		} else {
			delete(r.acked, o)
			delete(r.at, o)
		}
	}
	r.delivered, r.floor = keep, off
	return true
}

// advance makes the offsets up to off-1 count as passed (nothing to
// deliver there), when off is above the next deliverable offset.
func (r *refModel) advance(off int64) {
	next := r.start
	if l, ok := r.last(); ok {
		next = l + 1
	}
	if off > next && off <= math.MaxInt64 {
		r.floor = off
	}
}

func (r *refModel) firstUnacked() (int64, bool) {
	for _, o := range r.delivered {
		if !r.acked[o] {
			return o, true
		}
	}
	return 0, false
}

func (r *refModel) committable() int64 {
	if o, ok := r.firstUnacked(); ok {
		return o
	}
	if l, ok := r.last(); ok {
		return l + 1
	}
	return r.start
}

func (r *refModel) deliver(off int64, t time.Time) bool {
	if off > math.MaxInt64-1 || off < r.start {
		return false
	}
	if l, ok := r.last(); ok && off <= l {
		return false
	}
	r.delivered = append(r.delivered, off)
	r.at[off] = t
	return true
}

// deliverRun accepts first..first+n-1 whole, as deliver would one by one,
// or nothing.
func (r *refModel) deliverRun(first int64, n int, t time.Time) bool {
	if n < 1 {
		return true
	}
	if first > math.MaxInt64-1 || first < r.start || int64(n-1) > math.MaxInt64-1-first {
		return false
	}
	if l, ok := r.last(); ok && first <= l {
		return false
	}
	for k := range int64(n) {
		r.deliver(first+k, t)
	}
	return true
}

func (r *refModel) ack(off int64) AckResult {
	found := false
	for _, o := range r.delivered {
		if o == off {
			found = true
		}
	}
	if !found || off < r.committable() {
		return AckUnknown
	}
	if r.acked[off] {
		return AckDuplicate
	}
	r.acked[off] = true
	return AckOK
}

func (r *refModel) pending() int {
	n := 0
	for _, o := range r.delivered {
		if !r.acked[o] {
			n++
		}
	}
	return n
}

func (r *refModel) outstanding() int {
	c, n := r.committable(), 0
	for _, o := range r.delivered {
		if o >= c {
			n++
		}
	}
	return n
}

// pendingOffsets returns the unacked delivered offsets.
func (r *refModel) pendingOffsets() []int64 {
	var out []int64
	for _, o := range r.delivered {
		if !r.acked[o] {
			out = append(out, o)
		}
	}
	return out
}

// checker drives a Tracker and a refModel in lockstep and compares them after
// every operation.
type checker struct {
	tb   testing.TB
	tr   *Tracker
	ref  *refModel
	prev int64 // committable before the current operation
	ops  int
}

func newChecker(tb testing.TB, start int64) *checker {
	c := &checker{tb: tb, tr: NewTracker(start), ref: newRefModel(start)}
	c.prev = c.tr.Committable()
	c.check("NewTracker")
	return c
}

func (c *checker) deliver(off int64, t time.Time) {
	c.ops++
	err := c.tr.Deliver(off, t)
	ok := c.ref.deliver(off, t)
	if ok != (err == nil) {
		c.tb.Fatalf("op %d: Deliver(%d) = %v, reference accepts=%v", c.ops, off, err, ok)
	}
	if err != nil {
		var de *DeliverError
		if !errors.As(err, &de) || !(errors.Is(err, ErrOutOfOrder) || errors.Is(err, ErrAboveMax)) || de.Offset != off {
			c.tb.Fatalf("op %d: Deliver(%d) returned unexpected error %#v", c.ops, off, err)
		}
	}
	c.check("Deliver")
}

func (c *checker) deliverRun(first int64, n int, t time.Time) {
	c.ops++
	err := c.tr.DeliverRun(first, n, t)
	ok := c.ref.deliverRun(first, n, t)
	if ok != (err == nil) {
		c.tb.Fatalf("op %d: DeliverRun(%d, %d) = %v, reference accepts=%v", c.ops, first, n, err, ok)
	}
	if err != nil {
		var de *DeliverError
		if !errors.As(err, &de) || !(errors.Is(err, ErrOutOfOrder) || errors.Is(err, ErrAboveMax)) || de.Offset != first {
			c.tb.Fatalf("op %d: DeliverRun(%d, %d) returned unexpected error %#v", c.ops, first, n, err)
		}
	}
	c.check("DeliverRun")
}

func (c *checker) ack(off int64) {
	c.ops++
	got := c.tr.Ack(off)
	want := c.ref.ack(off)
	if got != want {
		c.tb.Fatalf("op %d: Ack(%d) = %v, reference %v", c.ops, off, got, want)
	}
	c.check("Ack")
}

// ackBelow checks AckBelow against the reference's acks, in increasing
// order, of its pending offsets below off.
func (c *checker) ackBelow(off int64) {
	c.ops++
	got := c.tr.AckBelow(off)
	want := 0
	for _, o := range c.ref.pendingOffsets() {
		if o < off && c.ref.ack(o) == AckOK {
			want++
		}
	}
	if got != want {
		c.tb.Fatalf("op %d: AckBelow(%d) = %d, reference acks %d", c.ops, off, got, want)
	}
	c.check("AckBelow")
}

// unackedRun is what UnackedRun must say: whether the offsets held (from
// the committable one to the last delivered) are all delivered, none
// acked, one after the other.
func (r *refModel) unackedRun() (int64, bool) {
	from := r.committable()
	var held []int64
	for _, o := range r.delivered {
		if o >= from {
			if r.acked[o] {
				return from, false
			}
			held = append(held, o)
		}
	}
	if len(held) == 0 {
		return from, true
	}
	last, _ := r.last()
	for i, o := range held {
		if o != from+int64(i) {
			return from, false
		}
	}
	return from, held[len(held)-1] == last
}

func (c *checker) truncate(off int64) {
	c.ops++
	err := c.tr.Truncate(off)
	ok := c.ref.truncate(off)
	if ok != (err == nil) {
		c.tb.Fatalf("op %d: Truncate(%d) = %v, reference accepts=%v", c.ops, off, err, ok)
	}
	if err != nil && (!errors.Is(err, ErrOutOfOrder) || !errors.As(err, new(*DeliverError))) {
		c.tb.Fatalf("op %d: Truncate(%d) returned unexpected error %#v", c.ops, off, err)
	}
	last, _ := c.ref.last()
	for _, probe := range []int64{c.tr.Committable() - 1, c.tr.Committable(), off - 1, off, last} {
		want := 0
		for _, o := range c.ref.delivered {
			if o > probe && o >= c.ref.committable() {
				want++
			}
		}
		if got := c.tr.HeldAbove(probe); got != want {
			c.tb.Fatalf("op %d: HeldAbove(%d) = %d, reference %d", c.ops, probe, got, want)
		}
	}
	c.check("Truncate")
}

func (c *checker) advance(off int64) {
	c.ops++
	c.tr.Advance(off)
	c.ref.advance(off)
	c.check("Advance")
}

func (c *checker) trim() {
	c.ops++
	held := c.tr.Outstanding()
	had := c.tr.Capacity()
	released := c.tr.Trim()
	if released != (held == 0 && had > 0) || (released && c.tr.Capacity() != 0) {
		c.tb.Fatalf("op %d: Trim() = %v with %d held in a ring of %d (now %d)", c.ops, released, held, had, c.tr.Capacity())
	}
	c.check("Trim")
}

func (c *checker) reset(start int64) {
	c.ops++
	c.tr.Reset(start)
	c.ref.reset(start)
	c.prev = c.tr.Committable() // Reset may legitimately move backwards
	c.check("Reset")
}

func (c *checker) check(what string) {
	tb, tr, ref := c.tb, c.tr, c.ref
	tb.Helper()
	got := tr.Committable()
	if got < c.prev {
		tb.Fatalf("op %d (%s): Committable moved backwards %d -> %d", c.ops, what, c.prev, got)
	}
	c.prev = got
	if fu, ok := ref.firstUnacked(); ok && got > fu {
		tb.Fatalf("op %d (%s): Committable %d above first unacked offset %d", c.ops, what, got, fu)
	}
	if from, ok := tr.UnackedRun(); true {
		if wfrom, wok := ref.unackedRun(); ok != wok || ok && from != wfrom {
			tb.Fatalf("op %d (%s): UnackedRun() = %d, %v; reference %d, %v", c.ops, what, from, ok, wfrom, wok)
		}
	}
	if want := ref.committable(); got != want {
		tb.Fatalf("op %d (%s): Committable() = %d, reference %d", c.ops, what, got, want)
	}
	if g, w := tr.Pending(), ref.pending(); g != w {
		tb.Fatalf("op %d (%s): Pending() = %d, reference %d", c.ops, what, g, w)
	}
	if g, w := tr.Outstanding(), ref.outstanding(); g != w {
		tb.Fatalf("op %d (%s): Outstanding() = %d, reference %d", c.ops, what, g, w)
	}
	gl, gok := tr.LastDelivered()
	wl, wok := ref.last()
	if gl != wl || gok != wok {
		tb.Fatalf("op %d (%s): LastDelivered() = %d,%v, reference %d,%v", c.ops, what, gl, gok, wl, wok)
	}
	go_, gat, gok := tr.OldestPending()
	wo, wok := ref.firstUnacked()
	if go_ != wo || gok != wok || (wok && !gat.Equal(ref.at[wo])) {
		tb.Fatalf("op %d (%s): OldestPending() = %d,%v,%v, reference %d,%v,%v", c.ops, what, go_, gat, gok, wo, ref.at[wo], wok)
	}
}

// satAdd returns a+b for b >= 0, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func randomStart(rng *rand.Rand) int64 {
	switch rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return rng.Int64N(1000)
	case 2:
		return rng.Int64N(1 << 40)
	default:
		return MaxOffset - rng.Int64N(300)
	}
}

// TestModelRandomized compares Tracker against refModel over many seeded
// random Deliver/Ack/Reset/Truncate/Trim/Advance sequences.
func TestModelRandomized(t *testing.T) {
	seeds, ops := 400, 600
	if testing.Short() {
		seeds = 50
	}
	for seed := 0; seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
		c := newChecker(t, randomStart(rng))
		gapProb := rng.IntN(4)     // 0..3 out of 10
		ackBias := 3 + rng.IntN(6) // 3..8 out of 10
		for i := 0; i < ops; i++ {
			last, hasLast := c.ref.last()
			next := c.ref.start
			if hasLast {
				next = satAdd(last, 1)
			}
			switch p := rng.IntN(100); {
			case p < 1:
				if rng.IntN(2) == 0 {
					c.reset(randomStart(rng))
				} else {
					c.trim()
				}
			case p < 3: // truncate around the held range (some below it)
				c.truncate(c.tr.Committable() - 1 + rng.Int64N(max(min(next-c.tr.Committable(), 1<<20), 0)+3))
				continue
			case p < 4 && rng.IntN(2) == 0: // past offsets with nothing to deliver
				c.advance(satAdd(next, rng.Int64N(6)-1))
				continue
			case p < 4: // invalid delivery
				switch rng.IntN(3) {
				case 0:
					c.deliver(next-1-rng.Int64N(3), at(int64(i)))
				case 1:
					c.deliver(math.MaxInt64, at(int64(i)))
				default:
					c.deliver(-rng.Int64N(5)-1, at(int64(i)))
				}
			case p < 4+10*(10-ackBias):
				off := next
				if rng.IntN(10) < gapProb {
					off = satAdd(next, 1+rng.Int64N(5))
				}
				c.deliver(off, at(int64(i)))
			case rng.IntN(20) == 0: // everything pending below a point
				c.ackBelow(c.tr.Committable() - 1 + rng.Int64N(12))
			default:
				if pend := c.ref.pendingOffsets(); len(pend) > 0 && rng.IntN(4) != 0 {
					c.ack(pend[rng.IntN(len(pend))])
					continue
				}
				// Anywhere around the tracked range: unknown, gap,
				// duplicate, below watermark, future.
				lo := c.tr.Committable() - 3
				span := int64(8)
				if hasLast && last >= lo {
					d := last - lo
					if d < 0 { // overflowed: last near MaxInt64, lo below 0
						d = 1 << 20
					}
					span += min(d, 1<<20)
				}
				c.ack(lo + rng.Int64N(span))
			}
		}
	}
}

// TestTruncate covers messages taken for delivery and never handed out.
func TestTruncate(t *testing.T) {
	at := at(0)
	tr := NewTracker(10)
	for _, o := range []int64{10, 11, 12, 15, 16} {
		if err := tr.Deliver(o, at); err != nil {
			t.Fatal(err)
		}
	}
	tr.Ack(10)
	tr.Ack(12)
	if got := tr.HeldAbove(11); got != 3 {
		t.Fatalf("HeldAbove(11) = %d, want 3 (12, 15, 16)", got)
	}
	if err := tr.Truncate(10); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("Truncate below the committable offset 11: %v, want ErrOutOfOrder", err)
	}
	if err := tr.Truncate(15); err != nil {
		t.Fatal(err)
	}
	if c, p, n := tr.Committable(), tr.Pending(), tr.Outstanding(); c != 11 || p != 1 || n != 2 {
		t.Fatalf("after Truncate(15): committable %d, pending %d, outstanding %d; want 11, 1, 2", c, p, n)
	}
	if last, ok := tr.LastDelivered(); !ok || last != 14 {
		t.Fatalf("LastDelivered = %d,%v; want 14,true", last, ok)
	}
	if r := tr.Ack(15); r != AckUnknown {
		t.Fatalf("Ack of a truncated offset = %v, want unknown", r)
	}
	if err := tr.Deliver(15, at); err != nil {
		t.Fatalf("Deliver after Truncate: %v", err)
	}
	tr.Ack(11)
	tr.Ack(15)
	if c := tr.Committable(); c != 16 {
		t.Fatalf("committable %d, want 16", c)
	}
	// Everything held truncated at a gap: the committable offset stays.
	if err := tr.Deliver(20, at); err != nil {
		t.Fatal(err)
	}
	if err := tr.Truncate(20); err != nil {
		t.Fatal(err)
	}
	if c, n := tr.Committable(), tr.Outstanding(); c != 20 || n != 0 {
		t.Fatalf("committable %d, outstanding %d; want 20, 0", c, n)
	}
}

// TestRingShrinks: a ring grown for a backlog is dropped when it empties
// after a run that needed far less, Trim releases an empty ring, and
// neither changes what the tracker answers.
func TestRingShrinks(t *testing.T) {
	tr := NewTracker(0)
	var next int64
	run := func(n int) {
		t.Helper()
		for range n {
			if err := tr.Deliver(next, at(next)); err != nil {
				t.Fatal(err)
			}
			next++
		}
		for o := next - int64(n); o < next; o++ {
			if r := tr.Ack(o); r != AckOK {
				t.Fatalf("Ack(%d) = %v", o, r)
			}
		}
		if tr.Committable() != next || tr.Outstanding() != 0 {
			t.Fatalf("after a run: Committable %d Outstanding %d, want %d 0", tr.Committable(), tr.Outstanding(), next)
		}
	}
	run(10000) // a backlog: the ring grows to 16384 and keeps it while it held as much
	if c := tr.Capacity(); c != 16384 {
		t.Fatalf("capacity after a backlog %d, want 16384", c)
	}
	run(100) // the next run, into the big ring, needed 128: dropped when it empties
	if c := tr.Capacity(); c != 0 {
		t.Fatalf("capacity after a small run in a big ring %d, want 0 (dropped)", c)
	}
	run(100) // grows again only as far as needed, and keeps it
	if c := tr.Capacity(); c != 128 {
		t.Fatalf("capacity after a second small run %d, want 128", c)
	}
	run(40) // 64 would do: within the slack, kept
	if c := tr.Capacity(); c != 128 {
		t.Fatalf("capacity after a run of 40 %d, want 128 (kept)", c)
	}
	// Trim refuses while something is held, releases once empty.
	for o := next; o < next+40; o++ {
		if err := tr.Deliver(o, at(o)); err != nil {
			t.Fatal(err)
		}
	}
	if tr.Trim() || tr.Capacity() != 128 {
		t.Fatalf("Trim with entries held released the ring (capacity %d)", tr.Capacity())
	}
	for o := next; o < next+40; o++ {
		if tr.Ack(o) != AckOK {
			t.Fatalf("Ack(%d)", o)
		}
	}
	next += 40
	if tr.Capacity() != 128 {
		t.Fatalf("capacity %d, want 128 (kept)", tr.Capacity())
	}
	if !tr.Trim() || tr.Capacity() != 0 {
		t.Fatalf("Trim of an empty tracker kept capacity %d", tr.Capacity())
	}
	if tr.Trim() {
		t.Fatal("second Trim released something")
	}
	if tr.Committable() != next {
		t.Fatalf("Committable %d after Trim, want %d", tr.Committable(), next)
	}
	if last, ok := tr.LastDelivered(); !ok || last != next-1 {
		t.Fatalf("LastDelivered %d %v after Trim, want %d", last, ok, next-1)
	}
	if err := tr.Deliver(next-1, at(next)); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("Deliver of the last delivered offset after Trim: %v, want ErrOutOfOrder", err)
	}
	run(3)
}

// TestAckNeverAllocates: an ack that empties (and so drops) an oversized
// ring does not allocate; acks run on the user's goroutine.
func TestAckNeverAllocates(t *testing.T) {
	// AllocsPerRun calls the function once to warm up, then once measured.
	var trs [2]*Tracker
	for i := range trs {
		tr := NewTracker(0)
		for o := range int64(1000) { // ring of 1024
			if err := tr.Deliver(o, t0); err != nil {
				t.Fatal(err)
			}
		}
		for o := range int64(1000) { // held 1000: kept
			tr.Ack(o)
		}
		if err := tr.Deliver(1000, t0); err != nil { // a small run into the big ring
			t.Fatal(err)
		}
		if tr.Capacity() != 1024 {
			t.Fatalf("capacity %d, want 1024", tr.Capacity())
		}
		trs[i] = tr
	}
	i := 0
	allocs := testing.AllocsPerRun(1, func() {
		if r := trs[i].Ack(1000); r != AckOK {
			t.Fatalf("Ack = %v", r)
		}
		i++
	})
	if allocs != 0 || trs[1].Capacity() != 0 {
		t.Fatalf("the shrinking Ack allocated %.0f times and left capacity %d; want 0 and 0", allocs, trs[1].Capacity())
	}
}

// TestIdleTrackerMemory: the heap a Tracker keeps after a backlog of
// 10,000 messages was acked and a small run followed, and after Trim.
func TestIdleTrackerMemory(t *testing.T) {
	const n = 50
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	b0 := live()
	trs := make([]*Tracker, n)
	for i := range trs {
		tr := NewTracker(0)
		for o := range int64(10000) {
			_ = tr.Deliver(o, t0)
		}
		for o := range int64(10000) {
			tr.Ack(o)
		}
		trs[i] = tr
	}
	backlog := float64(live()-b0) / n
	for _, tr := range trs {
		_ = tr.Deliver(10000, t0)
		tr.Ack(10000)
	}
	after := float64(int64(live())-int64(b0)) / n
	for _, tr := range trs {
		tr.Trim()
	}
	trimmed := float64(int64(live())-int64(b0)) / n
	runtime.KeepAlive(trs)
	t.Logf("bytes per tracker: after a backlog %.0f, after a small run %.0f, trimmed %.0f", backlog, after, trimmed)
	if backlog < 200_000 { // 16,384 slots of 17 bytes: about 280 KB
		t.Errorf("a tracker that held 10,000 entries keeps %.0f bytes; the measurement is off", backlog)
	}
	if after > 2048 || trimmed > 2048 {
		t.Errorf("an idle tracker keeps %.0f bytes after a small run, %.0f after Trim; want at most 2 KB", after, trimmed)
	}
}

// TestAdvance: offsets past the last delivered one with nothing to deliver
// (a transaction's commit marker) become committable once everything
// delivered is acked, and Deliver continues after them.
func TestAdvance(t *testing.T) {
	tr := NewTracker(10)
	tr.Advance(10) // not above the start: nothing
	if l, ok := tr.LastDelivered(); ok || tr.Committable() != 10 {
		t.Fatalf("Advance(start): last %d,%v, committable %d", l, ok, tr.Committable())
	}
	for o := int64(10); o < 13; o++ {
		if err := tr.Deliver(o, t0); err != nil {
			t.Fatal(err)
		}
	}
	tr.Advance(14) // 13: a commit marker
	if got := tr.Committable(); got != 10 {
		t.Fatalf("Committable %d with 10..12 pending; want 10", got)
	}
	tr.Ack(11)
	tr.Ack(12)
	if got := tr.Committable(); got != 10 {
		t.Fatalf("Committable %d with 10 pending; want 10", got)
	}
	tr.Ack(10)
	if got := tr.Committable(); got != 14 {
		t.Fatalf("Committable %d with everything acked; want 14, past the marker", got)
	}
	if err := tr.Deliver(13, t0); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("Deliver(13) after Advance(14): %v; want ErrOutOfOrder", err)
	}
	tr.Advance(12) // below: nothing
	if l, ok := tr.LastDelivered(); !ok || l != 13 {
		t.Fatalf("LastDelivered %d,%v; want 13", l, ok)
	}
	if err := tr.Deliver(14, t0); err != nil {
		t.Fatal(err)
	}
	if got := tr.Committable(); got != 14 {
		t.Fatalf("Committable %d with 14 pending; want 14", got)
	}
}

// TestOldestPendingTimes: delivery times are kept as nanoseconds after the
// first delivery's and come back as the same instants, monotonic clock
// readings included, also for a time before the first one, after Trim,
// and after a Reset that starts from a later base.
func TestOldestPendingTimes(t *testing.T) {
	now := time.Now() // with a monotonic reading
	tr := NewTracker(0)
	times := []time.Time{now, now.Add(-time.Hour), now.Add(90 * time.Second)}
	for i, at := range times {
		if err := tr.Deliver(int64(i), at); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range times {
		off, at, ok := tr.OldestPending()
		if !ok || off != int64(i) || !at.Equal(want) || at.Sub(want) != 0 {
			t.Fatalf("OldestPending() = %d, %v, %v; want %d, %v", off, at, ok, i, want)
		}
		tr.Ack(int64(i))
	}
	if !tr.Trim() {
		t.Fatal("Trim released nothing")
	}
	later := now.Add(time.Minute)
	if err := tr.Deliver(3, later); err != nil {
		t.Fatal(err)
	}
	if _, at, _ := tr.OldestPending(); !at.Equal(later) {
		t.Fatalf("after Trim: OldestPending time %v, want %v", at, later)
	}
	tr.Reset(10)
	wall := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC) // no monotonic reading
	if err := tr.Deliver(10, wall); err != nil {
		t.Fatal(err)
	}
	if _, at, _ := tr.OldestPending(); !at.Equal(wall) {
		t.Fatalf("after Reset: OldestPending time %v, want %v", at, wall)
	}
}

// TestDeliverRun: a run delivered in one call leaves the tracker as the
// same offsets delivered one by one do (acks, commits and times
// included), across the ring's growth and wrap-around; a run that starts
// out of order or ends above MaxOffset changes nothing.
func TestDeliverRun(t *testing.T) {
	one, run := NewTracker(5), NewTracker(5)
	at := t0
	first := int64(5)
	for i, n := range []int{1, 3, 40, 0, 200, 7} {
		at = at.Add(time.Second)
		for k := range int64(n) {
			if err := one.Deliver(first+k, at); err != nil {
				t.Fatal(err)
			}
		}
		if err := run.DeliverRun(first, n, at); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		first += int64(n) + 2 // a gap, as compaction leaves
		// Ack the older half of what is pending, so that the ring wraps.
		for k, off := 0, one.Committable(); k < one.Pending()/2; off++ {
			if r1, r2 := one.Ack(off), run.Ack(off); r1 != r2 {
				t.Fatalf("Ack(%d) = %v by one, %v by run", off, r1, r2)
			} else if r1 == AckOK {
				k++
			}
		}
		if one.Committable() != run.Committable() || one.Pending() != run.Pending() || one.Outstanding() != run.Outstanding() {
			t.Fatalf("run %d: committable %d/%d, pending %d/%d, outstanding %d/%d (one by one / run)", i,
				one.Committable(), run.Committable(), one.Pending(), run.Pending(), one.Outstanding(), run.Outstanding())
		}
		o1, a1, ok1 := one.OldestPending()
		o2, a2, ok2 := run.OldestPending()
		if o1 != o2 || !a1.Equal(a2) || ok1 != ok2 {
			t.Fatalf("run %d: OldestPending %d %v %v, run %d %v %v", i, o1, a1, ok1, o2, a2, ok2)
		}
		l1, _ := one.LastDelivered()
		l2, _ := run.LastDelivered()
		if l1 != l2 {
			t.Fatalf("run %d: LastDelivered %d, run %d", i, l1, l2)
		}
	}
	last, _ := run.LastDelivered()
	before := run.Outstanding()
	for _, c := range []struct {
		first int64
		n     int
		err   error
	}{
		{last, 2, ErrOutOfOrder},
		{4, 1, ErrOutOfOrder},
		{-5, 3, ErrOutOfOrder},
		{MaxOffset - 1, 3, ErrAboveMax},
		{MaxOffset + 1, 1, ErrAboveMax},
	} {
		err := run.DeliverRun(c.first, c.n, at)
		var de *DeliverError
		if !errors.Is(err, c.err) || !errors.As(err, &de) || de.Offset != c.first {
			t.Errorf("DeliverRun(%d, %d) = %v, want %v naming %d", c.first, c.n, err, c.err, c.first)
		}
	}
	if l, _ := run.LastDelivered(); l != last || run.Outstanding() != before {
		t.Errorf("refused runs changed the tracker: last %d (was %d), outstanding %d (was %d)", l, last, run.Outstanding(), before)
	}
	if err := run.DeliverRun(MaxOffset-1, 2, at); err != nil {
		t.Errorf("a run ending at MaxOffset: %v", err)
	}
}

// TestDeliverRunGrowsOnce: a run delivered to an empty tracker grows the
// ring once, to the power of two that holds it (three arrays), not by
// doubling one allocation at a time.
func TestDeliverRunGrowsOnce(t *testing.T) {
	tr := NewTracker(0)
	allocs := testing.AllocsPerRun(5, func() {
		tr.Reset(0)
		tr.Trim()
		if err := tr.DeliverRun(0, 6000, time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 3 || tr.Capacity() != 8192 {
		t.Errorf("%v allocations, capacity %d; want 3, 8192", allocs, tr.Capacity())
	}
}

package scale

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
)

// tracker follows, for one run of one side, who owns each partition and
// what each owner delivered. Members report to it: assign when a partition
// is handed to them (zkgroup's OnAssigned, sarama's ConsumeClaim start),
// revoke when they let it go (OnRevoked, ConsumeClaim's return), deliver
// for every message received. Safe for concurrent use.
type tracker struct {
	parts   []part
	moves   atomic.Int64 // assigns to a member other than the previous owner (or none)
	claims  atomic.Int64 // every assign, also to the same member again
	foreign atomic.Int64 // messages delivered by a member that did not own the partition
	msgs    atomic.Int64
	// waits: with $ZKGROUP_BENCH_TIMELINE, the window's deliveries by
	// time, with how long their records waited in the log (waitBuckets).
	waits *waitBuckets
}

// waitBuckets counts a window's deliveries in 100 ms buckets from its
// start: how many, how many waited over 100 ms in the log, and the longest
// wait, for partitions kept through the window and for the others apart.
type waitBuckets struct {
	mu    sync.Mutex
	start int64
	b     [2][64]struct{ n, slow, max int64 }
}

func (w *waitBuckets) note(kept bool, now, appended int64) {
	if w == nil || appended <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	i := (now - w.start) / int64(100*time.Millisecond)
	if w.start == 0 || i < 0 || i >= int64(len(w.b[0])) {
		return
	}
	k := 1
	if kept {
		k = 0
	}
	e, wait := &w.b[k][i], now-appended
	e.n++
	if wait > int64(100*time.Millisecond) {
		e.slow++
	}
	e.max = max(e.max, wait)
}

func (w *waitBuckets) open() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.start = time.Now().UnixNano()
	clear(w.b[:])
	w.mu.Unlock()
}

func (w *waitBuckets) print() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	benchkit.Say("   deliveries by 100 ms since the window opened (kept: count/over 100 ms/longest wait ms | moved: the same):")
	for i := range w.b[0] {
		k, m := w.b[0][i], w.b[1][i]
		if k.n == 0 && m.n == 0 {
			continue
		}
		benchkit.Say("     %+5d ms: %6d/%-5d %5.0f | %6d/%-5d %5.0f", i*100, k.n, k.slow, float64(k.max)/1e6, m.n, m.slow, float64(m.max)/1e6)
	}
}

type part struct {
	mu         sync.Mutex
	owner      int // member holding it now, or -1
	prevOwner  int // last member it was assigned to (kept across a revoke), or -1
	ownerSince int64
	// ownerProduced is the newest produce time (unix ns) the owner
	// delivered since it was assigned.
	ownerProduced int64
	// ownerAppended and ownerAt: that message's append time and when it
	// was delivered (unix ns), for the last partitions to flow (lastFlows).
	ownerAppended, ownerAt int64
	lastAt                 int64 // when the last message was delivered (unix ns)
	lastBy                 int   // by whom
	// The pause window (see openWindow).
	wOwner  int
	wMoved  bool
	wMaxGap int64
	wGapEnd int64 // when the longest gap ended (unix ns)
	// wAnyGap: the longest gap between two deliveries by anyone (the
	// partition unconsumed, whoever owned it).
	wAnyGap int64
	// wGaps: the owner's gaps of the window over gapNoted, for the pause
	// that overlaps a given stretch (pauseDuring).
	wGaps []gapRec
	// wMaxWait: the longest a record the window's owner delivered had
	// waited in the log (delivery minus the broker's append time). Unlike a
	// gap it holds nothing of the producer's own stalls: a pause with short
	// waits is a pause in production, not in consumption.
	wMaxWait int64
	// hist: the partition's last assigns and revokes, for the report on
	// the longest pause (worstKept).
	hist []ownEvent
}

// ownEvent is one assign (or revoke) of a partition to member m (unix ns).
type ownEvent struct {
	at     int64
	m      int
	assign bool
}

// histKept bounds part.hist.
const histKept = 24

func (x *part) noteOwn(m int, assign bool) {
	if len(x.hist) == histKept {
		x.hist = append(x.hist[:0], x.hist[1:]...)
	}
	x.hist = append(x.hist, ownEvent{time.Now().UnixNano(), m, assign})
}

// gapRec is one gap between two deliveries by the same member (unix ns).
type gapRec struct{ start, end int64 }

// gapNoted: shorter gaps are not kept for pauseDuring (a partition of the
// benches gets a message every few ms).
const gapNoted = 5 * time.Millisecond

func newTracker(partitions int) *tracker {
	t := &tracker{parts: make([]part, partitions)}
	if timelineOn() {
		t.waits = &waitBuckets{}
	}
	for i := range t.parts {
		p := &t.parts[i]
		p.owner, p.prevOwner, p.lastBy, p.wOwner = -1, -1, -1, -1
	}
	return t
}

func (t *tracker) part(p int32) *part {
	if p < 0 || int(p) >= len(t.parts) {
		return nil
	}
	return &t.parts[p]
}

func (t *tracker) assign(m int, p int32) {
	x := t.part(p)
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	t.claims.Add(1)
	if x.prevOwner != m {
		t.moves.Add(1)
	}
	if m != x.wOwner {
		x.wMoved = true
	}
	x.owner, x.prevOwner = m, m
	x.noteOwn(m, true)
	x.ownerSince = time.Now().UnixNano()
	x.ownerProduced = 0
}

func (t *tracker) revoke(m int, p int32) {
	x := t.part(p)
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.noteOwn(m, false)
	if x.owner == m {
		x.owner = -1
	}
}

// deliver records a message member m delivered: produced is its produce
// time and appended the broker's append time (both unix ns; the benches'
// topics use LogAppendTime, see benchkit.UseLogAppendTime).
func (t *tracker) deliver(m int, p int32, produced, appended int64) {
	x := t.part(p)
	if x == nil {
		return
	}
	now := time.Now().UnixNano()
	t.msgs.Add(1)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.owner != m {
		t.foreign.Add(1)
	} else if produced > x.ownerProduced {
		x.ownerProduced, x.ownerAppended, x.ownerAt = produced, appended, now
	}
	if m == x.wOwner && appended > 0 {
		x.wMaxWait = max(x.wMaxWait, now-appended)
	}
	t.waits.note(m == x.wOwner && !x.wMoved, now, appended)
	if x.lastBy == m && x.lastAt > 0 {
		gap := now - x.lastAt
		if gap > x.wMaxGap {
			x.wMaxGap, x.wGapEnd = gap, now
		}
		if gap >= int64(gapNoted) {
			x.wGaps = append(x.wGaps, gapRec{x.lastAt, now})
		}
	}
	if x.lastAt > 0 {
		x.wAnyGap = max(x.wAnyGap, now-x.lastAt)
	}
	x.lastAt, x.lastBy = now, m
}

// silent counts the partitions that are not yet flowing since since: a
// partition flows when one of members owns it and has delivered, since it
// was assigned, a message produced after since. short counts the members
// that own fewer than their share, floor(partitions / members): every
// strategy here balances to within one, so a member under its share means
// the change has not been carried out yet (right after a join, the old
// owners still deliver everything).
func (t *tracker) silent(since time.Time, members []int) (silent, short int) {
	s := since.UnixNano()
	owned := map[int]int{}
	for i := range t.parts {
		x := &t.parts[i]
		x.mu.Lock()
		if x.owner < 0 || !slices.Contains(members, x.owner) || x.ownerProduced <= s {
			silent++
		}
		if x.owner >= 0 {
			owned[x.owner]++
		}
		x.mu.Unlock()
	}
	share := len(t.parts) / len(members)
	for _, m := range members {
		if owned[m] < share {
			short++
		}
	}
	return silent, short
}

// flowResult is the outcome of awaitFlow.
type flowResult struct {
	d             time.Duration // from since to convergence, or to giving up
	silent, short int           // when it gave up (both 0: converged)
}

func (f flowResult) ok() bool { return f.silent == 0 && f.short == 0 }

// openWindow starts measuring pauses: each partition's owner now (or, in
// the middle of a revoke, the member it was last assigned to) keeps it
// through the window unless another member is assigned it.
func (t *tracker) openWindow() {
	t.waits.open()
	for i := range t.parts {
		x := &t.parts[i]
		x.mu.Lock()
		x.wOwner = x.owner
		if x.wOwner < 0 {
			x.wOwner = x.prevOwner
		}
		x.wMoved = false
		x.wMaxGap, x.wGapEnd, x.wAnyGap, x.wMaxWait = 0, 0, 0, 0
		x.wGaps = x.wGaps[:0]
		x.mu.Unlock()
	}
}

// closeWindow returns, for each member that ok accepts, the longest pause
// on the partitions it kept through the window: the largest gap between two
// consecutive deliveries by it (the first may precede the window), or the
// time since its last delivery when the partition is still silent at end.
func (t *tracker) closeWindow(end time.Time, ok func(int) bool) map[int]time.Duration {
	out := map[int]time.Duration{}
	e := end.UnixNano()
	t.eachKept(ok, func(_ int, x *part) {
		gap := x.wMaxGap
		if x.lastBy == x.wOwner && x.lastAt > 0 {
			gap = max(gap, e-x.lastAt)
		}
		out[x.wOwner] = max(out[x.wOwner], time.Duration(gap))
	})
	return out
}

// longestWaits returns, for each member that ok accepts, the longest a
// record of a partition it kept through the window waited in the log
// before it delivered it (see part.wMaxWait). Call it before the next
// openWindow.
func (t *tracker) longestWaits(ok func(int) bool) map[int]time.Duration {
	out := map[int]time.Duration{}
	t.eachKept(ok, func(_ int, x *part) {
		out[x.wOwner] = max(out[x.wOwner], time.Duration(x.wMaxWait))
	})
	return out
}

// worstKept describes the partition kept through the window (by a member
// ok accepts) with the longest pause as closeWindow counts it: its number,
// when that gap began and ended, and its last assigns and revokes.
func (t *tracker) worstKept(end time.Time, ok func(int) bool) (p int, from, to time.Time, hist []ownEvent) {
	p = -1
	var best int64
	e := end.UnixNano()
	t.eachKept(ok, func(i int, x *part) {
		gap, gEnd := x.wMaxGap, x.wGapEnd
		if x.lastBy == x.wOwner && x.lastAt > 0 && e-x.lastAt > gap {
			gap, gEnd = e-x.lastAt, e
		}
		if gap > best {
			best, p, hist = gap, i, slices.Clone(x.hist)
			from, to = time.Unix(0, gEnd-gap), time.Unix(0, gEnd)
		}
	})
	return p, from, to, hist
}

// longestWaitKept describes the partition kept through the window (by a
// member ok accepts) whose record waited longest in the log before it was
// delivered: its number, that wait, when its owner delivered first in the
// window, and its last assigns and revokes. A long wait with no long
// pause is a partition whose owner began delivering late (it was assigned
// before the window, with a backlog since its last owner's last delivery).
func (t *tracker) longestWaitKept(ok func(int) bool) (p int, wait time.Duration, hist []ownEvent) {
	p = -1
	var best int64
	t.eachKept(ok, func(i int, x *part) {
		if x.wMaxWait > best {
			best, p, hist = x.wMaxWait, i, slices.Clone(x.hist)
		}
	})
	return p, time.Duration(best), hist
}

// eachKept calls f, under the partition's lock, with the number of every
// partition kept through the window by a member that ok accepts.
func (t *tracker) eachKept(ok func(int) bool, f func(i int, x *part)) {
	for i := range t.parts {
		x := &t.parts[i]
		x.mu.Lock()
		if x.wOwner >= 0 && !x.wMoved && ok(x.wOwner) {
			f(i, x)
		}
		x.mu.Unlock()
	}
}

// pauseDuring returns the longest pause on a partition kept through the
// window (as closeWindow counts them) that overlaps [from, to]: what a
// change in that stretch may have caused, where closeWindow's figure also
// holds the pauses of the rest of the window. now closes a gap still open.
func (t *tracker) pauseDuring(from, to, now time.Time, ok func(int) bool) time.Duration {
	f, e, n := from.UnixNano(), to.UnixNano(), now.UnixNano()
	var out int64
	t.eachKept(ok, func(_ int, x *part) {
		gaps := x.wGaps
		if x.lastBy == x.wOwner && x.lastAt > 0 {
			gaps = append(gaps[:len(gaps):len(gaps)], gapRec{x.lastAt, n})
		}
		for _, g := range gaps {
			if g.end >= f && g.start <= e {
				out = max(out, g.end-g.start)
			}
		}
	})
	return time.Duration(out)
}

// longestStretch returns, over every partition, the longest time it went
// unconsumed in the window: the largest gap between two deliveries by
// anyone, or the time since the last delivery at end.
func (t *tracker) longestStretch(end time.Time) time.Duration {
	var out int64
	e := end.UnixNano()
	for i := range t.parts {
		x := &t.parts[i]
		x.mu.Lock()
		g := x.wAnyGap
		if x.lastAt > 0 {
			g = max(g, e-x.lastAt)
		}
		out = max(out, g)
		x.mu.Unlock()
	}
	return time.Duration(out)
}

// owned counts the partitions each member holds now.
func (t *tracker) owned() map[int]int {
	out := map[int]int{}
	for i := range t.parts {
		x := &t.parts[i]
		x.mu.Lock()
		if x.owner >= 0 {
			out[x.owner]++
		}
		x.mu.Unlock()
	}
	return out
}

// awaitFlow polls until every partition flows since since and every one
// of members has its share (see silent), or timeout passes.
func (t *tracker) awaitFlow(since time.Time, members []int, timeout time.Duration) flowResult {
	deadline := since.Add(timeout)
	var flows *lastFlows
	if timelineOn() {
		flows = &lastFlows{first: make([]flowSeen, len(t.parts))}
	}
	for {
		silent, short := t.silent(since, members)
		now := time.Now()
		flows.note(t, since, members)
		if (silent == 0 && short == 0) || now.After(deadline) {
			flows.print(since)
			return flowResult{now.Sub(since), silent, short}
		}
		time.Sleep(10 * time.Millisecond) // polling the per-partition state
	}
}

// upTo lists members 0..n-1.
func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func anyMember(int) bool { return true }

func only(ms ...int) func(int) bool {
	return func(m int) bool {
		for _, x := range ms {
			if x == m {
				return true
			}
		}
		return false
	}
}

func below(n int) func(int) bool { return func(m int) bool { return m < n } }

// timeline prints, every 250 ms until the returned func is called, each
// member's owned partitions and how many of them delivered within the last
// second (a diagnostic, on with $ZKGROUP_BENCH_TIMELINE).
func (t *tracker) timeline(since time.Time, members int) func() {
	if !timelineOn() {
		return func() {}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			now := time.Now().UnixNano()
			owned, flowing := make([]int, members), make([]int, members)
			for i := range t.parts {
				x := &t.parts[i]
				x.mu.Lock()
				if x.owner >= 0 && x.owner < members {
					owned[x.owner]++
					if x.lastBy == x.owner && now-x.lastAt < int64(time.Second) {
						flowing[x.owner]++
					}
				}
				x.mu.Unlock()
			}
			var b strings.Builder
			fmt.Fprintf(&b, "   t=%+6.2fs (%s)", time.Since(since).Seconds(), time.Now().Format("15:04:05.0"))
			for m := range members {
				fmt.Fprintf(&b, " %4d/%-4d", owned[m], flowing[m])
			}
			benchkit.Say("%s", b.String())
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(stop); <-done }) }
}

// longestGaps says, for each member that ok accepts, when its longest gap
// on a kept partition began and ended relative to t0 (a diagnostic for
// $ZKGROUP_BENCH_TIMELINE).
func (t *tracker) longestGaps(t0 time.Time, ok func(int) bool) string {
	type gap struct{ d, end int64 }
	best := map[int]gap{}
	for i := range t.parts {
		x := &t.parts[i]
		x.mu.Lock()
		if x.wOwner >= 0 && !x.wMoved && ok(x.wOwner) && x.wMaxGap > best[x.wOwner].d {
			best[x.wOwner] = gap{x.wMaxGap, x.wGapEnd}
		}
		x.mu.Unlock()
	}
	var b strings.Builder
	for m := 0; m < 64; m++ {
		g, found := best[m]
		if !found {
			continue
		}
		end := time.Duration(g.end - t0.UnixNano())
		fmt.Fprintf(&b, " m%d %.0f ms [%+.0f, %+.0f ms]", m, float64(g.d)/1e6, float64(end-time.Duration(g.d))/1e6, float64(end)/1e6)
	}
	return b.String()
}

// timelineOn reports whether $ZKGROUP_BENCH_TIMELINE asks for the
// diagnostics of the phases' timelines.
func timelineOn() bool { return os.Getenv("ZKGROUP_BENCH_TIMELINE") != "" }

// lastFlows notes, for each partition, the first poll of awaitFlow that
// found it flowing, with the message that made it flow: a diagnostic of
// which partitions came last and why (on with $ZKGROUP_BENCH_TIMELINE).
type lastFlows struct{ first []flowSeen }

type flowSeen struct {
	seen, produced, appended, delivered int64 // unix ns; seen 0: not yet
	owner                               int
	ownerSince                          int64
}

func (f *lastFlows) note(t *tracker, since time.Time, members []int) {
	if f == nil {
		return
	}
	s, now := since.UnixNano(), time.Now().UnixNano()
	for i := range t.parts {
		if f.first[i].seen != 0 {
			continue
		}
		x := &t.parts[i]
		x.mu.Lock()
		if x.owner >= 0 && slices.Contains(members, x.owner) && x.ownerProduced > s {
			f.first[i] = flowSeen{now, x.ownerProduced, x.ownerAppended, x.ownerAt, x.owner, x.ownerSince}
		}
		x.mu.Unlock()
	}
}

func (f *lastFlows) print(since time.Time) {
	if f == nil {
		return
	}
	idx := make([]int, len(f.first))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(f.first[b].delivered, f.first[a].delivered) })
	s := since.UnixNano()
	ms := func(t int64) string {
		if t == 0 {
			return "-"
		}
		return fmt.Sprintf("%+.0f", float64(t-s)/1e6)
	}
	benchkit.Say("   last partitions to flow (ms after since: owner since, produced, appended, delivered):")
	for _, i := range idx[:min(8, len(idx))] {
		e := f.first[i]
		benchkit.Say("     p%d m%d: %s %s %s %s", i, e.owner, ms(e.ownerSince), ms(e.produced), ms(e.appended), ms(e.delivered))
	}
}

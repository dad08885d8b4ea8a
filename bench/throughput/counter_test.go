package throughput

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
)

// counter checks and times one pass: every offset of every partition
// exactly once and in order, and when the first, the windowFrom-th, the
// windowTo-th and the last message came. Safe for concurrent use by one
// goroutine per partition (or any number of goroutines for different
// partitions).
type counter struct {
	want              int64
	next              []atomic.Int64
	total, bad        atomic.Int64
	from, to          int64
	t0                time.Time
	cpu0              time.Duration
	first, tFrom, tTo atomic.Int64 // unix ns
	cpuFrom, cpuTo    atomic.Int64
	tEnd, cpuEnd      atomic.Int64
	done              chan struct{}
	// The timeline (-timeline): when each tenth of the messages had come,
	// and when each partition's first message came (unix ns; 0: none).
	deciles    [10]atomic.Int64
	partFirsts []atomic.Int64
}

func newCounter(partitions int, want int64) *counter {
	return &counter{
		want: want, next: make([]atomic.Int64, partitions),
		from: want / 10, to: want * 9 / 10,
		done:       make(chan struct{}),
		partFirsts: make([]atomic.Int64, partitions),
	}
}

// start: the side is about to join.
func (c *counter) start() { c.t0, c.cpu0 = time.Now(), benchkit.CPUTime() }

// add records one received message; it reports whether the pass is
// complete (that message was the last one).
func (c *counter) add(p int32, off int64) bool {
	if p < 0 || int(p) >= len(c.next) || !c.next[p].CompareAndSwap(off, off+1) {
		c.bad.Add(1)
		return false
	}
	n := c.total.Add(1)
	if off == 0 {
		c.partFirsts[p].Store(time.Now().UnixNano())
	}
	if n%(c.want/10) == 0 && n/(c.want/10) <= 10 {
		c.deciles[n/(c.want/10)-1].Store(time.Now().UnixNano())
	}
	switch n {
	case 1:
		c.first.Store(time.Now().UnixNano())
	case c.from:
		c.tFrom.Store(time.Now().UnixNano())
		c.cpuFrom.Store(int64(benchkit.CPUTime()))
	case c.to:
		c.tTo.Store(time.Now().UnixNano())
		c.cpuTo.Store(int64(benchkit.CPUTime()))
	}
	if n == c.want {
		c.tEnd.Store(time.Now().UnixNano())
		c.cpuEnd.Store(int64(benchkit.CPUTime()))
		close(c.done)
		return true
	}
	return false
}

// figures are one pass's results.
type figures struct {
	e2e       float64 // messages/s from the start (Join) to the last message
	steady    float64 // messages/s from the from-th to the to-th message
	cpuPer    float64 // CPU ns per message from the start to the last message
	cpuSteady float64 // CPU ns per message over the steady window
	firstMs   float64 // start -> first message
}

func (c *counter) figures() figures {
	end := time.Unix(0, c.tEnd.Load())
	w := float64(c.to - c.from)
	return figures{
		e2e:       float64(c.want) / end.Sub(c.t0).Seconds(),
		steady:    w / time.Duration(c.tTo.Load()-c.tFrom.Load()).Seconds(),
		cpuPer:    float64(c.cpuEnd.Load()-int64(c.cpu0)) / float64(c.want),
		cpuSteady: float64(c.cpuTo.Load()-c.cpuFrom.Load()) / w,
		firstMs:   float64(c.first.Load()-c.t0.UnixNano()) / 1e6,
	}
}

// timeline describes when the messages came, from the start (ms): each
// tenth of them, and the quantiles of the partitions' first messages.
func (c *counter) timeline() string {
	ms := func(ns int64) float64 { return float64(ns-c.t0.UnixNano()) / 1e6 }
	var b strings.Builder
	b.WriteString("tenths at ms:")
	for i := range c.deciles {
		fmt.Fprintf(&b, " %.0f", ms(c.deciles[i].Load()))
	}
	firsts := make([]float64, 0, len(c.partFirsts))
	for i := range c.partFirsts {
		if v := c.partFirsts[i].Load(); v != 0 {
			firsts = append(firsts, ms(v))
		}
	}
	slices.Sort(firsts)
	if len(firsts) > 0 {
		q := func(f float64) float64 { return firsts[min(len(firsts)-1, int(f*float64(len(firsts))))] }
		fmt.Fprintf(&b, "; partitions' first message at ms: p10 %.0f, p50 %.0f, p90 %.0f, last %.0f", q(0.1), q(0.5), q(0.9), firsts[len(firsts)-1])
	}
	return b.String()
}

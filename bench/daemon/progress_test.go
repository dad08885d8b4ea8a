package daemon

import (
	"sync/atomic"
	"time"
)

// progress counts the messages one pass delivered and times them from
// start: the first, and the one that made the count reach mark. add is
// safe for concurrent use; done is closed (once) when the count reaches
// mark.
type progress struct {
	want  int64        // messages the pass is about
	mark  int64        // the count that ends the pass: want, or less by a child's slack (set before start)
	t0    atomic.Int64 // unix ns of start
	n     atomic.Int64
	first atomic.Int64 // time.Duration since t0 of the first message
	last  atomic.Int64 // time.Duration since t0 when the count reached mark
	done  chan struct{}
}

func newProgress(want int64) *progress {
	return &progress{want: want, mark: want, done: make(chan struct{})}
}

// start marks time zero: call it right before the side's process starts,
// before anything may call add.
func (p *progress) start() { p.t0.Store(time.Now().UnixNano()) }

// add counts k more messages.
func (p *progress) add(k int64) {
	if k <= 0 {
		return
	}
	n := p.n.Add(k)
	now := time.Now().UnixNano() - p.t0.Load()
	if n == k {
		p.first.Store(now)
	}
	if n >= p.mark && n-k < p.mark {
		p.last.Store(now)
		close(p.done)
	}
}

// set raises the count to total (a poller that sees totals, from one
// goroutine); a lower total is ignored.
func (p *progress) set(total int64) { p.add(total - p.n.Load()) }

// count is the messages counted so far.
func (p *progress) count() int64 { return p.n.Load() }

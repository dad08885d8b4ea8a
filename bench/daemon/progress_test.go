package daemon

import (
	"sync"
	"sync/atomic"
	"time"
)

// progress counts the messages one pass delivered and times them from
// start: the first, and the end of the pass. The pass ends (done is
// closed, once) when the count reaches want, or, for a consumer that
// keeps up to slack lines in its own stdout buffer until it exits, when
// it reports that it has read every partition to its end (atEnd) and the
// count is within slack of want. add and atEnd are safe for concurrent
// use.
type progress struct {
	want  int64        // messages the pass is about
	slack int64        // set before start; see child.slack
	t0    atomic.Int64 // unix ns of start
	n     atomic.Int64
	end   atomic.Bool  // the consumer said it read everything
	first atomic.Int64 // time.Duration since t0 of the first message
	last  atomic.Int64 // time.Duration since t0 at the end of the pass
	once  sync.Once
	done  chan struct{}
}

func newProgress(want int64) *progress {
	return &progress{want: want, done: make(chan struct{})}
}

// start marks time zero: call it right before the side's process starts,
// before anything may call add.
func (p *progress) start() { p.t0.Store(time.Now().UnixNano()) }

func (p *progress) since() int64 { return time.Now().UnixNano() - p.t0.Load() }

// add counts k more messages.
func (p *progress) add(k int64) {
	if k <= 0 {
		return
	}
	n := p.n.Add(k)
	if n == k {
		p.first.Store(p.since())
	}
	p.check(n)
}

// atEnd records that the consumer has read every partition to its end.
func (p *progress) atEnd() {
	p.end.Store(true)
	p.check(p.n.Load())
}

// check ends the pass once n messages are enough.
func (p *progress) check(n int64) {
	if n >= p.want || (p.end.Load() && n >= p.want-p.slack) {
		p.once.Do(func() {
			p.last.Store(p.since())
			close(p.done)
		})
	}
}

// set raises the count to total (a poller that sees totals, from one
// goroutine); a lower total is ignored.
func (p *progress) set(total int64) { p.add(total - p.n.Load()) }

// count is the messages counted so far.
func (p *progress) count() int64 { return p.n.Load() }

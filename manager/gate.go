package manager

import (
	"sync"

	"github.com/zkgroup/zkgroup/internal/shrink"
)

// gate is open while the ZooKeeper session is healthy. It hands out
// channels for partition.Fence: one closed while open, one closed while
// shut. Safe for concurrent use.
//
// Every partition manager waits on its "shut" channel in each hand-off to
// the user, so each claim gets a channel of its own (a gateLink): one
// shared channel would make every hand-off contend for that channel's
// lock. set closes them all, synchronously, when the gate shuts.
type gate struct {
	mu     sync.Mutex
	up     chan struct{} // closed while open
	closed chan struct{} // always closed: "shut" while shut
	open   bool
	links  map[*gateLink]struct{} // links holding an open "shut" channel
	peak   shrink.Peak            // of links
}

// gateLink is one claim's view of the gate. Its fields are guarded by the
// gate's mutex.
type gateLink struct {
	down chan struct{} // closed when the gate shuts; nil: none handed out
	left bool
}

func newGate() *gate {
	g := &gate{up: make(chan struct{}), closed: make(chan struct{}), links: map[*gateLink]struct{}{}}
	close(g.closed)
	return g
}

// ready returns a closed channel while open, else one closed on opening.
func (g *gate) ready() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.up
}

// suspended returns, for l, a closed channel while shut (or once l left),
// else l's own channel, closed on shutting.
func (g *gate) suspended(l *gateLink) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open || l.left {
		return g.closed
	}
	if l.down == nil {
		l.down = make(chan struct{})
		g.links[l] = struct{}{}
		g.peak.Note(len(g.links))
	}
	return l.down
}

// leave forgets l (its claim ended); l is shut from now on.
func (g *gate) leave(l *gateLink) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l.left = true
	delete(g.links, l)
	g.links = shrink.Map(g.links, &g.peak)
}

// shutUnless shuts the gate unless valid says otherwise, both under the
// gate's lock: a lease found expired before the session's health caught
// up stops every hand-out at once. The consumer's health watcher opens
// the gate again when the session reports healthy.
func (g *gate) shutUnless(valid func() bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open || valid() {
		return
	}
	g.shutLocked()
}

func (g *gate) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if open == g.open {
		return
	}
	g.open = open
	if open {
		close(g.up)
		return
	}
	g.shutLocked()
}

func (g *gate) shutLocked() {
	g.open = false
	g.up = make(chan struct{})
	for l := range g.links {
		close(l.down)
		l.down = nil
	}
	clear(g.links)
	g.links = shrink.Map(g.links, &g.peak)
}

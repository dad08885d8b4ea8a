package manager

import "sync"

// gate is open while the ZooKeeper session is healthy. It hands out
// channels for partition.Fence: one closed while open, one closed while
// shut. Safe for concurrent use.
type gate struct {
	mu   sync.Mutex
	up   chan struct{} // closed while open
	down chan struct{} // closed while shut
	open bool
}

func newGate() *gate {
	g := &gate{up: make(chan struct{}), down: make(chan struct{})}
	close(g.down)
	return g
}

// ready returns a closed channel while open, else one closed on opening.
func (g *gate) ready() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.up
}

// suspended returns a closed channel while shut, else one closed on shutting.
func (g *gate) suspended() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.down
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
		g.down = make(chan struct{})
	} else {
		g.up = make(chan struct{})
		close(g.down)
	}
}

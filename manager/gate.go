package manager

import "sync"

// gate is a channel that is closed while open, for partition.Fence.Ready.
// Safe for concurrent use.
type gate struct {
	mu   sync.Mutex
	ch   chan struct{}
	open bool
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

// ready returns a closed channel while open, else one closed on opening.
func (g *gate) ready() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ch
}

func (g *gate) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if open == g.open {
		return
	}
	g.open = open
	if open {
		close(g.ch)
	} else {
		g.ch = make(chan struct{})
	}
}

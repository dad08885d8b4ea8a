package manager

import (
	"reflect"
	"testing"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestGateLinks(t *testing.T) {
	g := newGate()
	var a, b gateLink
	if !isClosed(g.suspended(&a)) || isClosed(g.ready()) {
		t.Fatal("a new gate must be shut")
	}
	g.set(true)
	ra := g.ready()
	da, db := g.suspended(&a), g.suspended(&b)
	if !isClosed(ra) || isClosed(da) || isClosed(db) {
		t.Fatal("open gate: ready must be closed, suspended open")
	}
	if da == db {
		t.Fatal("two links share one channel")
	}
	if g.suspended(&a) != da {
		t.Fatal("a link must keep its channel while the gate stays open")
	}
	g.set(false) // closes every link's channel before it returns
	if !isClosed(da) || !isClosed(db) || isClosed(g.ready()) {
		t.Fatal("shut gate: links' channels must be closed, ready open")
	}
	g.set(true)
	if d := g.suspended(&a); d == da || isClosed(d) {
		t.Fatal("after reopening a link needs a fresh open channel")
	}
	g.leave(&a)
	if !isClosed(g.suspended(&a)) {
		t.Fatal("a link that left must read as shut")
	}
	g.suspended(&b)
	if n := len(g.links); n != 1 {
		t.Fatalf("%d links registered, want 1 (a left)", n)
	}
}

// TestGateLinksShrink: the gate's map of links does not keep the room of
// the most claims it ever held (the first member to join holds every
// partition for a moment) once they left.
func TestGateLinksShrink(t *testing.T) {
	g := newGate()
	g.set(true)
	links := make([]gateLink, 1000)
	for i := range links {
		g.suspended(&links[i])
	}
	peak := reflect.ValueOf(g.links).UnsafePointer()
	for i := range links[10:] {
		g.leave(&links[10+i])
	}
	if len(g.links) != 10 || reflect.ValueOf(g.links).UnsafePointer() == peak {
		t.Fatalf("%d links in the map that held 1,000, want 10 in a new one", len(g.links))
	}
	for i := range links[:10] {
		if isClosed(g.suspended(&links[i])) {
			t.Fatal("a link still held lost its open channel in the copy")
		}
	}
}

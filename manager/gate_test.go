package manager

import "testing"

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

package zkconn

import (
	"strconv"
	"testing"
	"unsafe"

	"github.com/go-zookeeper/zk"
)

// TestNodeHooks: every hook of a path sees its events, none of another
// path's or of the session; a removed hook sees nothing more, removing it
// again changes nothing, and a path with no hook left is forgotten.
func TestNodeHooks(t *testing.T) {
	var h nodeHooks
	got := map[string]int{}
	hook := func(name string) func(zk.Event) { return func(zk.Event) { got[name]++ } }
	removeA := h.add("/p", hook("a"))
	removeB := h.add("/p", hook("b"))
	removeC := h.add("/q", hook("c"))
	h.dispatch(zk.Event{Type: zk.EventNodeDataChanged, Path: "/p"})
	h.dispatch(zk.Event{Type: zk.EventSession, Path: "/p"})
	h.dispatch(zk.Event{Type: zk.EventNodeDeleted, Path: "/r"})
	if got["a"] != 1 || got["b"] != 1 || got["c"] != 0 {
		t.Fatalf("after one event of /p: %v, want a and b once", got)
	}
	removeA()
	removeA() // a no-op
	h.dispatch(zk.Event{Type: zk.EventNodeDeleted, Path: "/p"})
	if got["a"] != 1 || got["b"] != 2 {
		t.Fatalf("after removing a: %v, want b alone to see the event", got)
	}
	removeB()
	removeC()
	h.dispatch(zk.Event{Type: zk.EventNodeDeleted, Path: "/p"})
	h.dispatch(zk.Event{Type: zk.EventNodeDeleted, Path: "/q"})
	if got["a"] != 1 || got["b"] != 2 || got["c"] != 0 {
		t.Fatalf("removed hooks were called: %v", got)
	}
	if len(h.fns) != 0 {
		t.Fatalf("paths kept with no hook: %v", h.fns)
	}
}

// TestFullKeptShared: the path of a followed node is the full one, and
// every call for it returns the same copy (go-zookeeper's watch entry and
// the node's hook share it).
func TestFullKeptShared(t *testing.T) {
	s := &Session{chroot: "/c"}
	a := s.fullKept("/x/" + strconv.Itoa(1))
	b := s.fullKept("/x/" + strconv.Itoa(1))
	if a != "/c/x/1" {
		t.Fatalf("full path %q, want /c/x/1", a)
	}
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatal("two copies of one followed node's path")
	}
}

package zkconn

import (
	"slices"
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

// TestPrefixHooks: a prefix hook sees the events of every node below its
// path, with the path below it, and neither its own node's nor a sibling
// path that merely shares the prefix; a node hook on the same path is
// called too; a removed prefix hook sees nothing more.
func TestPrefixHooks(t *testing.T) {
	var h nodeHooks
	var rels []string
	s := &Session{chroot: "/c", hooks: &h}
	remove := s.OnPrefixEvent("/g/owners", func(rel string, ev zk.Event) { rels = append(rels, rel) })
	node := 0
	removeNode := h.add("/c/g/owners/t/3", func(zk.Event) { node++ })
	for _, p := range []string{"/c/g/owners/t/3", "/c/g/owners/t", "/c/g/owners", "/c/g/ownersX/t/1", "/g/owners/t/1", "/c/g/owners/u/10"} {
		h.dispatch(zk.Event{Type: zk.EventNodeDeleted, Path: p})
	}
	h.dispatch(zk.Event{Type: zk.EventSession, Path: "/c/g/owners/t/4"})
	if want := []string{"t/3", "t", "u/10"}; !slices.Equal(rels, want) || node != 1 {
		t.Fatalf("prefix hook saw %q, node hook %d events; want %q and 1", rels, node, want)
	}
	remove()
	remove() // a no-op
	removeNode()
	h.dispatch(zk.Event{Type: zk.EventNodeDeleted, Path: "/c/g/owners/t/3"})
	if len(rels) != 3 || node != 1 || len(h.prefixes) != 0 {
		t.Fatalf("removed hooks were called or kept: %q, %d, %v", rels, node, h.prefixes)
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

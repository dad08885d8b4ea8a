package zkconn

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// nodeHooks hands the session's node events to functions registered for
// the node's path, so that one who holds many watches (a claim per owned
// partition) needs no goroutine per watch. go-zookeeper calls the
// session's event callback on its receive goroutine for every event,
// before it notifies the watch channels; the functions run there.
//
// A path has one hook or two (a member's owner cache and its claim both
// follow an owned partition's node) and a member follows every
// partition's owner node: a short slice per path, not a map, keeps that
// small (about 100 bytes less per node).
//
// A prefix hook (OnPrefixEvent) follows every node under a path with one
// entry: a member's owner cache follows the owner node of every partition
// of its topics that way, at no cost per node but go-zookeeper's watch.
type nodeHooks struct {
	mu       sync.Mutex
	next     uint64
	fns      map[string][]nodeHook // by full path
	prefixes []prefixHook
}

type prefixHook struct {
	k      uint64
	prefix string // full path and "/"
	f      func(rel string, ev zk.Event)
}

type nodeHook struct {
	k uint64
	f func(zk.Event)
}

// dispatch is go-zookeeper's event callback.
func (h *nodeHooks) dispatch(ev zk.Event) {
	if ev.Type == zk.EventSession || ev.Path == "" {
		return
	}
	h.mu.Lock()
	var fs []func(zk.Event)
	for _, e := range h.fns[ev.Path] {
		fs = append(fs, e.f)
	}
	var ps []prefixHook
	for _, e := range h.prefixes {
		if strings.HasPrefix(ev.Path, e.prefix) {
			ps = append(ps, e)
		}
	}
	h.mu.Unlock()
	for _, f := range fs {
		f(ev)
	}
	for _, e := range ps {
		e.f(ev.Path[len(e.prefix):], ev)
	}
}

func (h *nodeHooks) addPrefix(prefix string, f func(string, zk.Event)) (remove func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	k := h.next
	h.prefixes = append(h.prefixes, prefixHook{k: k, prefix: prefix, f: f})
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.prefixes = slices.DeleteFunc(h.prefixes, func(e prefixHook) bool { return e.k == k })
	}
}

func (h *nodeHooks) add(full string, f func(zk.Event)) (remove func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fns == nil {
		h.fns = map[string][]nodeHook{}
	}
	h.next++
	k := h.next
	h.fns[full] = append(h.fns[full], nodeHook{k: k, f: f})
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		rest := slices.DeleteFunc(h.fns[full], func(e nodeHook) bool { return e.k == k })
		if len(rest) == 0 {
			delete(h.fns, full)
			return
		}
		h.fns[full] = rest
	}
}

// OnNodeEvent calls f with each event of the node at p (chroot-relative;
// the event's Path is the full one) that a watch set on it through this
// session fires: EventNodeDataChanged, EventNodeDeleted,
// EventNodeCreated, EventNodeChildrenChanged, and EventNotWatching when
// the session's watches are dropped (it expired or was closed). f is
// called until remove is; each watch fires once, so f sees nothing more
// until a watch is set on p again (GetW, GetWFull, ExistsW, ChildrenW).
// An event that fired before OnNodeEvent returned may have been missed:
// set the hook first, or look at the watch's channel once afterwards.
//
// f runs on the client's receive goroutine: it must not block, nor call
// the session. Safe for concurrent use.
func (s *Session) OnNodeEvent(p string, f func(zk.Event)) (remove func()) {
	return s.hooks.add(s.fullKept(p), f)
}

// OnPrefixEvent is OnNodeEvent for every node under the node at p (its
// children, their children, ...; not p itself): f gets the node's path
// below p ("t/3" for p/t/3) and the event. It costs one entry however
// many nodes it follows. The same rules hold: f runs on the client's
// receive goroutine, must not block nor call the session, and sees only
// events of watches set through this session. Safe for concurrent use.
func (s *Session) OnPrefixEvent(p string, f func(rel string, ev zk.Event)) (remove func()) {
	return s.hooks.addPrefix(strings.TrimSuffix(s.full(p), "/")+"/", f)
}

// AfterEpoch calls f on a goroutine of its own once the session epoch
// whose done channel is epochDone (from Epoch) has ended, at once if it has
// already. stop unregisters f and reports whether it did so before f was
// started (context.AfterFunc's). Unlike a goroutine waiting on epochDone,
// it costs nothing while it waits. Safe for concurrent use.
func (s *Session) AfterEpoch(epochDone <-chan struct{}, f func()) (stop func() bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epochDone != s.epochDone { // ended
		go f()
		return func() bool { return false }
	}
	return context.AfterFunc(s.epochCtx, f)
}

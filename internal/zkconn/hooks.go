package zkconn

import (
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/shrink"
)

// nodeHooks hands the session's node events to functions registered for
// the node's path, so that one who holds many watches (a claim per owned
// partition) needs no goroutine per watch. go-zookeeper calls the
// session's event callback on its receive goroutine for every event,
// before it notifies the watch channels; the functions run there.
//
// A path has one hook, or a few (a claim and a watch on the same node):
// a short slice per path, not a map, keeps that small (about 100 bytes
// less per node).
type nodeHooks struct {
	mu   sync.Mutex
	next uint64
	fns  map[string][]nodeHook // by full path
	peak shrink.Peak           // of fns
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
	h.mu.Unlock()
	for _, f := range fs {
		f(ev)
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
	h.peak.Note(len(h.fns))
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		rest := slices.DeleteFunc(h.fns[full], func(e nodeHook) bool { return e.k == k })
		if len(rest) == 0 {
			delete(h.fns, full)
			h.fns = shrink.Map(h.fns, &h.peak)
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

// AfterEpoch calls f on a goroutine of its own once the session epoch
// whose done channel is epochDone (from Epoch) has ended, at once if it has
// already. stop unregisters f and reports whether it did so before f was
// started (as context.AfterFunc's). Unlike a goroutine waiting on
// epochDone, it costs nothing while it waits but an entry in a map of
// the session's. Safe for concurrent use.
func (s *Session) AfterEpoch(epochDone <-chan struct{}, f func()) (stop func() bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epochDone != s.epochDone { // ended
		go f()
		return func() bool { return false }
	}
	ef := &epochFunc{f: f}
	if s.epochFuncs == nil {
		s.epochFuncs = map[*epochFunc]struct{}{}
	}
	s.epochFuncs[ef] = struct{}{}
	s.epochPeak.Note(len(s.epochFuncs))
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if ef.done {
			return false
		}
		ef.done = true
		delete(s.epochFuncs, ef)
		s.epochFuncs = shrink.Map(s.epochFuncs, &s.epochPeak)
		return true
	}
}

// epochFunc is one of AfterEpoch's functions; done (under Session.mu)
// once started or taken back.
type epochFunc struct {
	f    func()
	done bool
}

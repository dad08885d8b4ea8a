package manager

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/subscription"
)

// registrations keeps the members' registrations between rebalances, each
// with a data watch, so that a rebalance reads only the registrations
// that are new or changed since the last: with N members a join cost
// every member N reads (N² in the group), now one. It also shares one
// Subscription and stream map between members that subscribe alike:
// every member holds every peer's registration, and in most groups all
// subscribe to the same topics (50 members of 100 topics held 250 KB of
// subscriptions each).
//
// An entry is used again only while its watch, set under the current
// session, has not fired. A watch that fires (the node changed or went,
// or the session's watches were dropped) marks its entry stale and
// signals changed, which the loop takes as a membership change. The
// loop's only, but for the watches' hooks, which touch an entry's stale
// flag and changed alone.
type registrations struct {
	nodes map[string]*cachedRegistration // by path
	subs  map[string]sharedSubscription  // by subscriptionKey
	// changed is signalled (buffered 1) when a watched registration
	// changed.
	changed chan struct{}
}

func newRegistrations() registrations {
	return registrations{changed: make(chan struct{}, 1)}
}

// cachedRegistration is a registration as read under a session epoch,
// with the hook of its watch.
type cachedRegistration struct {
	parsedRegistration
	czxid   int64
	version int32
	epoch   uint64
	stale   atomic.Bool // its watch fired
	remove  func()      // its hook's
}

// parsedRegistration is a registration node's data as parsed: reg (its
// Subscription the shared stream map) and sub, or err (wrapping
// ErrBadRegistration) when it does not parse.
type parsedRegistration struct {
	reg    zkdata.MemberRegistration
	sub    *subscription.Subscription
	subKey string // subscriptionKey of reg
	err    error
}

// sharedSubscription is a subscription and its stream counts as members
// share them (neither is modified).
type sharedSubscription struct {
	sub     *subscription.Subscription
	streams map[string]int
}

// regRead is one registration as readRegistrations returns it: parsed,
// with its node's creation zxid and version, or the read's error.
type regRead struct {
	parsedRegistration
	czxid   int64
	version int32
	readErr error // zk.ErrNoNode, ErrReplyTooLarge, ...
}

// watchedReader is what registrations reads with (a *zkconn.Session).
type watchedReader interface {
	GetMany(paths []string) ([]zkconn.NodeData, error)
	GetW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	OnNodeEvent(p string, f func(zk.Event)) (remove func())
}

// maxRegReads bounds the registration reads in flight at once.
const maxRegReads = 64

// read returns the registrations of ids at paths (the same order) under
// the session epoch: an entry whose watch holds as it is, any other read
// with a watch (GetW, up to maxRegReads at a time). The entries of paths
// not asked for are dropped, and their hooks removed. A nil
// *registrations reads every node in one multiRead, without watches.
func (r *registrations) read(s watchedReader, epoch uint64, ids, paths []string) ([]regRead, error) {
	out := make([]regRead, len(paths))
	if r == nil {
		nodes, err := s.GetMany(paths)
		if err != nil {
			return nil, err
		}
		for i, n := range nodes {
			out[i].czxid, out[i].version, out[i].readErr = n.Stat.Czxid, n.Stat.Version, n.Err
			if n.Err == nil {
				out[i].parsedRegistration = parseRegistration(ids[i], n.Data)
			}
		}
		return out, nil
	}
	kept := make(map[string]*cachedRegistration, len(paths))
	var missing []int
	for i, p := range paths {
		if e := r.nodes[p]; e != nil && e.epoch == epoch && !e.stale.Load() {
			kept[p] = e
			out[i] = regRead{parsedRegistration: e.parsedRegistration, czxid: e.czxid, version: e.version}
			continue
		}
		missing = append(missing, i)
	}
	entries := make([]*cachedRegistration, len(paths))
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, maxRegReads)
		errs = make([]error, len(paths))
		data = make([][]byte, len(paths))
	)
	for _, i := range missing {
		// The hook is set before the read, so that no change after the
		// read is missed.
		e := &cachedRegistration{epoch: epoch}
		e.remove = s.OnNodeEvent(paths[i], func(zk.Event) {
			e.stale.Store(true)
			select {
			case r.changed <- struct{}{}:
			default:
			}
		})
		entries[i] = e
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var st *zk.Stat
			data[i], st, _, errs[i] = s.GetW(paths[i])
			if errs[i] == nil {
				e.czxid, e.version = st.Czxid, st.Version
			}
		})
	}
	wg.Wait()
	// Parsed one after another, so that those read now share their
	// subscriptions too.
	subs := make(map[string]sharedSubscription, len(r.subs))
	for _, e := range kept {
		if e.err == nil {
			subs[e.subKey] = sharedSubscription{e.sub, e.reg.Subscription}
		}
	}
	var failed error
	for _, i := range missing {
		e := entries[i]
		if errs[i] == nil {
			e.parsedRegistration = parseRegistration(ids[i], data[i], subs, r.subs)
			if e.err == nil {
				subs[e.subKey] = sharedSubscription{e.sub, e.reg.Subscription}
			}
		}
		out[i] = regRead{parsedRegistration: e.parsedRegistration, czxid: e.czxid, version: e.version, readErr: errs[i]}
		if errs[i] != nil {
			e.remove()
			if !errors.Is(errs[i], zk.ErrNoNode) && !errors.Is(errs[i], ErrReplyTooLarge) {
				failed = errs[i]
			}
			continue
		}
		kept[paths[i]] = e
	}
	if failed != nil {
		for _, i := range missing {
			if errs[i] == nil {
				entries[i].remove()
			}
		}
		return nil, failed
	}
	for p, e := range r.nodes {
		if kept[p] != e {
			e.remove()
		}
	}
	r.nodes, r.subs = kept, subs
	return out, nil
}

// close removes every entry's hook.
func (r *registrations) close() {
	for _, e := range r.nodes {
		e.remove()
	}
	r.nodes, r.subs = nil, nil
}

// parseRegistration parses a registration node's data, taking the
// subscription from shared when one alike is there.
func parseRegistration(id string, data []byte, shared ...map[string]sharedSubscription) parsedRegistration {
	var p parsedRegistration
	reg, err := zkdata.ParseMemberRegistration(id, data)
	if err != nil {
		p.err = fmt.Errorf("%w: %w", ErrBadRegistration, err)
		return p
	}
	p.subKey = subscriptionKey(reg.Pattern, reg.Subscription)
	for _, subs := range shared {
		if s, ok := subs[p.subKey]; ok {
			reg.Subscription = s.streams
			p.reg, p.sub = reg, s.sub
			return p
		}
	}
	sub, err := subscription.FromRegistration(reg.Pattern, reg.Subscription)
	if err != nil {
		// %v: the cause wraps ErrConfig, and a peer's unreadable
		// registration is not this member's bad config.
		p.err = fmt.Errorf("%w: subscription: %v", ErrBadRegistration, err)
		return p
	}
	p.reg, p.sub = reg, sub
	return p
}

// subscriptionKey identifies a registration's subscription: its pattern
// and its entries, sorted.
func subscriptionKey(pattern string, streams map[string]int) string {
	var b strings.Builder
	b.WriteString(pattern)
	for _, k := range slices.Sorted(maps.Keys(streams)) {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(streams[k]))
	}
	return b.String()
}

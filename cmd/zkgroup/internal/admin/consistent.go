package admin

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/zkgroup/zkgroup/manager"
)

// viewRefreshAfter: /status reads the group view again, before it
// answers, when the view was read before the member's last rebalance
// applied or does not show the member's own claims, at most once per
// this interval (so that a lasting disagreement, a view read through a
// lagging ZooKeeper server, or ZooKeeper not answering costs at most one
// read per interval).
const viewRefreshAfter = 250 * time.Millisecond

// viewRefreshWait bounds how long /status waits for that read.
const viewRefreshWait = 2 * time.Second

// readBefore reports whether a view read at readAt (zero: none yet) was
// read before the member's last rebalance applied: it misses what the
// member claimed or released then. Pure.
func readBefore(readAt time.Time, st manager.Stats) bool {
	last, _ := st.LastRebalance()
	return readAt.IsZero() || readAt.Before(last.Applied)
}

// showsOwn reports whether v shows this member registered and owning
// every partition it fetches (not suspended). Pure.
func showsOwn(v GroupView, st manager.Stats) bool {
	if !slices.Contains(v.Members, st.Instance) {
		return false
	}
	for _, p := range st.Partitions {
		if !p.Suspended && v.Owners[TopicPartition{p.Topic, p.Partition}] != st.Instance {
			return false
		}
	}
	return true
}

// withOwn returns v with this member's own state laid over it, so that
// what the page says of the group never contradicts what it says of the
// member: the member is registered, and owns every partition it fetches
// (it fetches only under its claim; a view read through another
// ZooKeeper server may lag behind it). v is not changed. Pure.
func withOwn(v GroupView, st manager.Stats) GroupView {
	if showsOwn(v, st) {
		return v
	}
	out := v
	out.Owners = maps.Clone(v.Owners)
	if out.Owners == nil {
		out.Owners = map[TopicPartition]string{}
	}
	if !slices.Contains(v.Members, st.Instance) {
		out.Members = append(slices.Clone(v.Members), st.Instance)
		slices.Sort(out.Members)
	}
	listed := map[TopicPartition]bool{}
	for _, tp := range v.Partitions {
		listed[tp] = true
	}
	for _, p := range st.Partitions {
		tp := TopicPartition{p.Topic, p.Partition}
		if p.Suspended || !listed[tp] {
			continue
		}
		out.Owners[tp] = st.Instance
	}
	return out
}

// snapshot returns the stats and the group view /status shows: the view
// read again first (up to viewRefreshWait) when it misses the member's
// own rebalance (see viewRefreshAfter), the stats taken again after that
// read, and the member's own state laid over the view. view is nil
// without a Viewer.
func (s *Server) snapshot(ctx context.Context) (st manager.Stats, joined bool, view *GroupView, readAt time.Time, err error) {
	st, joined = s.stats()
	if s.cfg.View == nil {
		return st, joined, nil, time.Time{}, nil
	}
	v, at, err := s.cfg.View.Last()
	if joined && (readBefore(at, st) || !showsOwn(v, st)) && s.mayRefreshView() {
		rctx, cancel := context.WithTimeout(ctx, viewRefreshWait)
		if _, rerr := s.cfg.View.Refresh(rctx); rerr == nil {
			v, at, err = s.cfg.View.Last()
			st, joined = s.stats()
		}
		cancel()
	}
	if joined && !at.IsZero() {
		v = withOwn(v, st)
	}
	return st, joined, &v, at, err
}

// mayRefreshView reports whether /status may read the view now: true at
// most once per viewRefreshAfter.
func (s *Server) mayRefreshView() bool {
	now := time.Now().UnixNano()
	last := s.viewAttempt.Load()
	return now-last > int64(viewRefreshAfter) && s.viewAttempt.CompareAndSwap(last, now)
}

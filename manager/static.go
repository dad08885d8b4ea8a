package manager

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// Static members (Config.RestartGrace). A static member keeps a persistent
// restart marker, /consumers/<group>/static/<id>, holding its
// registration. While its registration (the ephemeral ids node) is gone
// and its marker is there, every member counts it as a member away: the
// assignment, computed by every member from the same ZooKeeper state,
// gives it its partitions as before, and nobody claims them. An instance
// that registers again with that id meets the same member list and the
// same owners (its partitions unowned), so the assignment is the one it
// had: it claims exactly its partitions and no other member's changes.
//
// The grace ends with the marker: each member that sees a member away
// starts a timer of the grace the marker holds, on its own monotonic
// clock, and the first to fire deletes the marker, in a transaction that
// fails if the member has registered again meanwhile. The deletion is an
// event every member sees in ZooKeeper, so they agree on when the member
// left for good without agreeing on a clock, and then rebalance as for
// any member that left.
//
// Why nothing of the old process takes effect once the new one consumes:
// the new instance claims with a new session (owner nodes with a newer
// czxid, the fencing token its commits carry); a process killed or paused
// while its session lived has its old claims taken over (see claim.go) and
// its lease ends with its session's answers, as for any member; a marker
// never gives a claim to anyone, it only keeps others from claiming.

// hasAway reports whether members holds a member away.
func hasAway(members []member) bool {
	for _, m := range members {
		if m.away {
			return true
		}
	}
	return false
}

// writeMarker writes this member's restart marker (its registration,
// with the grace) when grace > 0, and deletes a marker of its id left by
// an earlier run otherwise.
func writeMarker(s *zkconn.Session, group, id string, data []byte, grace time.Duration) error {
	p := zkdata.StaticMemberPath(group, id)
	if grace <= 0 {
		// A read first: a delete of a missing node is still a write, which
		// waits behind every write the ensemble has queued (a group's
		// claims while it rebalances), and there is seldom a marker.
		if ok, _, err := s.Exists(p); err == nil && !ok {
			return nil
		}
		if err := s.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("manager: deleting the restart marker %s: %w", p, err)
		}
		return nil
	}
	for attempt := 0; attempt < 3; attempt++ {
		_, err := s.Set(p, data, -1)
		if err == nil {
			return nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("manager: writing the restart marker %s: %w", p, err)
		}
		_, err = s.Create(p, data, 0, nil)
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			continue // created: set it once more (harmless); or raced
		}
		if errors.Is(err, zk.ErrNoNode) {
			if err := s.CreateParents(zkdata.StaticPath(group)); err != nil {
				return fmt.Errorf("manager: creating %s: %w", zkdata.StaticPath(group), err)
			}
			continue
		}
		return fmt.Errorf("manager: writing the restart marker %s: %w", p, err)
	}
	return fmt.Errorf("manager: writing the restart marker %s: gave up after 3 attempts", p)
}

// expireMarker deletes the restart marker of a member away once its grace
// passed, unless it registered again: the transaction creates and deletes
// its ids node (failing, whole, when the node exists) and deletes the
// marker at the version read. It reports whether the marker went.
func expireMarker(s *zkconn.Session, group, id string, version int32) (bool, error) {
	idp := zkdata.IDPath(group, id)
	_, err := s.Multi(
		&zk.CreateRequest{Path: idp, Data: []byte("{}"), Flags: zk.FlagEphemeral},
		&zk.DeleteRequest{Path: idp, Version: -1},
		&zk.DeleteRequest{Path: zkdata.StaticMemberPath(group, id), Version: version},
	)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
		return false, nil // back, gone already, or written again since
	}
	return false, err
}

// awayMember is a member away as this member saw it first.
type awayMember struct {
	since   time.Time // when this member first saw it away (monotonic)
	grace   time.Duration
	version int32 // of its marker
}

// noteAwayLocked records the members away of a plan: new ones from now,
// those back or gone forgotten. It returns when the first grace ends
// (zero: none). c.mu must be held.
func (c *Consumer) noteAwayLocked(members []member, now time.Time) time.Time {
	seen := map[string]bool{}
	for _, m := range members {
		if !m.away {
			continue
		}
		seen[m.id] = true
		a, ok := c.away[m.id]
		if !ok {
			a = awayMember{since: now}
			c.log.Info("member away: its partitions are kept for its restart", "peer", m.id, "grace", m.grace)
		}
		a.grace, a.version = m.grace, m.version
		c.away[m.id] = a
	}
	for id := range c.away {
		if !seen[id] {
			delete(c.away, id)
		}
	}
	var first time.Time
	for _, a := range c.away {
		if end := a.since.Add(a.grace); first.IsZero() || end.Before(first) {
			first = end
		}
	}
	return first
}

// expireAway deletes the markers of the members away whose grace ended
// (by this member's clock) and returns when the next grace ends (zero:
// none). Their deletion fires every member's watch on the markers.
func (c *Consumer) expireAway(now time.Time) time.Time {
	c.mu.Lock()
	type due struct {
		id      string
		version int32
	}
	var expired []due
	var next time.Time
	for id, a := range c.away {
		end := a.since.Add(a.grace)
		if !end.After(now) {
			expired = append(expired, due{id, a.version})
			continue
		}
		if next.IsZero() || end.Before(next) {
			next = end
		}
	}
	c.mu.Unlock()
	for _, d := range expired {
		gone, err := expireMarker(c.session, c.group, d.id, d.version)
		switch {
		case err != nil:
			c.log.Warn("deleting the restart marker of a member away failed; retrying", "peer", d.id, "error", err)
			if r := now.Add(time.Second); next.IsZero() || r.Before(next) {
				next = r
			}
		case gone:
			c.log.Info("member away past its restart grace: its partitions move", "peer", d.id)
		}
	}
	return next
}

// awayIDs returns the members away, sorted. c.mu must be held.
func (v *groupView) awayIDsLocked() []string {
	out := make([]string, 0, len(v.away))
	for id := range v.away {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

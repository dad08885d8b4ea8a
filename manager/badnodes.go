package manager

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// noteBadRegistrationsLocked reports each unreadable registration on
// Errors() and in the log once while it lasts. c.mu must be held.
func (c *Consumer) noteBadRegistrationsLocked(members []member) {
	now := map[string]bool{}
	for _, m := range members {
		if m.err == nil {
			continue
		}
		path := zkdata.IDPath(c.group, m.id)
		now[path] = true
		c.noteNodeLocked(path, m.err, "member registration unreadable; it is given no partitions")
	}
	c.forgetNodesLocked(zkdata.IDsPath(c.group)+"/", now)
}

// noteSquatsLocked reports each partition whose claim has waited
// ClaimWaitCheck or more on a holder that has not been a member of the
// group for ClaimWaitCheck or more, once while it lasts, and counts them.
// Both bounds: a member that leaves goes with its owner nodes (one
// session close), but the claims waiting on them may learn that later
// than the member list does, and are then not squatted on. c.mu must be
// held.
func (c *Consumer) noteSquatsLocked(now time.Time) {
	squats := map[string]bool{}
	seen := map[string]bool{}
	if c.waitingClaims.Load() > 0 { // otherwise no slot has a holder
		c.findSquatsLocked(now, squats, seen)
	}
	for h := range c.nonMembers {
		if !seen[h] {
			delete(c.nonMembers, h)
		}
	}
	c.squatted = len(squats)
	c.forgetNodesLocked(zkdata.OwnersPath(c.group)+"/", squats)
}

// findSquatsLocked notes in seen the holders of waiting claims that are
// not members, and in squats (reporting each) the owner nodes that such
// a holder kept for ClaimWaitCheck.
func (c *Consumer) findSquatsLocked(now time.Time, squats, seen map[string]bool) {
	members := map[string]bool{}
	for _, id := range c.members {
		members[id] = true
	}
	for _, sl := range c.slots {
		h, since := sl.holder.Load(), sl.waitingSince.Load()
		if h == nil || members[*h] || since == 0 {
			continue
		}
		seen[*h] = true
		first, ok := c.nonMembers[*h]
		if !ok {
			first = now
			c.nonMembers[*h] = now
		}
		wait := c.cfg.ClaimWaitCheck
		if _, ok := c.departed[*h]; ok {
			wait = max(wait, c.departedGrace())
		}
		if now.Sub(time.Unix(0, since)) < wait || now.Sub(first) < wait {
			continue
		}
		path := zkdata.OwnerPath(c.group, sl.tp.Topic, sl.tp.Partition)
		squats[path] = true
		c.noteNodeLocked(path, fmt.Errorf("%w: held by %q", ErrSquatted, *h),
			"partition held by an id that is not a member of the group; it cannot be claimed until that node goes")
	}
}

// departedGrace is how long a member that left may keep its owner nodes
// before a claim waiting on one reports it squatted: a member deletes its
// registration before its partitions drain (deregisterEarly) and its
// owner nodes when its session closes, bounded by its CloseTimeout, or
// they expire with its session if it dies meanwhile.
func (c *Consumer) departedGrace() time.Duration {
	return c.cfg.CloseTimeout + c.cfg.SessionTimeout
}

// noteDepartedLocked notes when each member of c.members that is not in
// members was first seen gone (at), and forgets those back in the group
// or gone for longer than departedGrace. c.mu must be held.
func (c *Consumer) noteDepartedLocked(members []string, at time.Time) {
	in := make(map[string]bool, len(members))
	for _, id := range members {
		in[id] = true
	}
	for id, since := range c.departed {
		if in[id] || at.Sub(since) > c.departedGrace() {
			delete(c.departed, id)
		}
	}
	for _, id := range c.members {
		if _, ok := c.departed[id]; !ok && !in[id] {
			c.departed[id] = at
		}
	}
}

// noteNodeLocked reports err for path unless it was reported already.
func (c *Consumer) noteNodeLocked(path string, err error, msg string) {
	if c.badNodes[path] == err.Error() {
		return
	}
	c.badNodes[path] = err.Error()
	c.log.Warn(msg, "path", path, "error", err)
	c.report(&NodeError{Path: path, Err: err})
}

// forgetNodesLocked forgets the reported nodes under prefix that are not in
// now, so that a problem that comes back is reported again.
func (v *groupView) forgetNodesLocked(prefix string, now map[string]bool) {
	for p := range v.badNodes {
		if strings.HasPrefix(p, prefix) && !now[p] {
			delete(v.badNodes, p)
		}
	}
}

// noteMalformedTopic reports a topic node the metadata reader skipped as
// malformed (a *metadata.MalformedError) on Errors() and counts it. Called
// from the metadata reader's goroutine; does not block.
func (c *Consumer) noteMalformedTopic(err error) {
	path := ""
	var me *metadata.MalformedError
	if errors.As(err, &me) {
		path = me.Path
	}
	c.malformedTopics.Add(1)
	c.log.Warn("topic node malformed; its partitions are not consumed until it is fixed", "path", path, "error", err)
	c.report(&NodeError{Path: path, Err: fmt.Errorf("%w: %w", ErrMalformedTopic, err)})
}

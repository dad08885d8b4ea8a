package manager

import (
	"fmt"
	"slices"
	"sort"

	"github.com/zkgroup/zkgroup/manager/assign"
)

// StrategyMismatchError reports a member of the group that publishes
// another assignment strategy than this member's Config.Strategy. Members
// computing with different strategies never agree on who owns what (each
// would wait on claims the other holds), so while it lasts every member
// that publishes a strategy computes with the strategy of the oldest such
// member (the one whose registration was created first in ZooKeeper), and
// a member that does not know that strategy (a custom one, or one of a
// newer version) claims nothing and, when it is a custom strategy, is given
// nothing by the members that compute it: no partition is consumed by two
// members and none moves back and forth. It is reported on Errors() once per peer
// and strategy while it lasts, and the peers are listed in
// Stats.StrategyMismatches. It unwraps to ErrStrategyMismatch. A plain
// value.
type StrategyMismatchError struct {
	// Member is this member's id and Strategy the name of its configured
	// strategy.
	Member, Strategy string
	// Peer is the other member's id and PeerStrategy the name it
	// publishes.
	Peer, PeerStrategy string
	// Oldest is the member whose strategy the group computes with, and
	// InForce that strategy's name, which this member computes with; ""
	// when this member does not know it and claims nothing.
	Oldest, InForce string
}

// Error names both members, both strategies and what this member does.
func (e *StrategyMismatchError) Error() string {
	what := fmt.Sprintf("computing with %q, the strategy of the oldest member %q", e.InForce, e.Oldest)
	if e.InForce == "" {
		what = fmt.Sprintf("claiming nothing: the strategy of the oldest member %q is unknown here", e.Oldest)
	}
	return fmt.Sprintf("%v: member %q is configured with %q, member %q publishes %q; %s",
		ErrStrategyMismatch, e.Member, e.Strategy, e.Peer, e.PeerStrategy, what)
}

// Unwrap returns ErrStrategyMismatch.
func (e *StrategyMismatchError) Unwrap() error { return ErrStrategyMismatch }

// strategyChoice is the strategy a rebalance computes with, from the
// strategies the members publish.
type strategyChoice struct {
	// use is the strategy to compute with; nil when this member does not
	// know the group's and must claim nothing.
	use assign.Strategy
	// oldest is the member whose published strategy rules ("" when no
	// member publishes one: own strategy).
	oldest, oldestStrategy string
	// peers maps the members publishing another strategy than own to
	// the name they publish.
	peers map[string]string
	// exclude: members given nothing, because they cannot compute the
	// strategy in force (a custom one they do not publish).
	exclude map[string]bool
}

// chooseStrategy decides what to compute with: own when every member that
// publishes a strategy publishes own's name (members publishing none, JVM
// consumers or older zkgroups, do not count), otherwise the strategy of the
// oldest member publishing one (smallest creation zxid of its ids node,
// then smallest id), found by assign.ByName, or nil when that is not a
// name assign knows. A strategy assign does not know is custom: only the
// members publishing its name can compute it, so the others are excluded
// from the assignment (given nothing) while it is in force. Every member
// reading the same registrations makes the same choice. It is pure.
func chooseStrategy(own assign.Strategy, members []member) strategyChoice {
	ch := strategyChoice{use: own}
	var oldest *member
	for i := range members {
		m := &members[i]
		if m.strategy == "" {
			continue
		}
		if m.strategy != own.Name() {
			if ch.peers == nil {
				ch.peers = map[string]string{}
			}
			ch.peers[m.id] = m.strategy
		}
		if oldest == nil || m.czxid < oldest.czxid || (m.czxid == oldest.czxid && m.id < oldest.id) {
			oldest = m
		}
	}
	if oldest == nil {
		return ch
	}
	ch.oldest, ch.oldestStrategy = oldest.id, oldest.strategy
	if _, err := assign.ByName(oldest.strategy); err != nil {
		ch.exclude = publishingOther(members, oldest.strategy)
	}
	if oldest.strategy == own.Name() {
		return ch
	}
	s, err := assign.ByName(oldest.strategy)
	if err != nil {
		ch.use = nil
		return ch
	}
	ch.use = s
	return ch
}

// publishingOther returns the members publishing a strategy other than
// name (nil: none).
func publishingOther(members []member, name string) map[string]bool {
	var out map[string]bool
	for _, m := range members {
		if m.strategy != "" && m.strategy != name {
			if out == nil {
				out = map[string]bool{}
			}
			out[m.id] = true
		}
	}
	return out
}

// noteStrategiesLocked reports each peer publishing another strategy on
// Errors() and in the log once per peer and strategy while it lasts, and
// keeps what Stats shows. c.mu must be held.
func (c *Consumer) noteStrategiesLocked(ch strategyChoice) {
	inForce := ""
	if ch.use != nil {
		inForce = ch.use.Name()
	}
	c.strategyInForce, c.strategyOldest = inForce, ch.oldest
	for id := range c.strategyPeers {
		if _, ok := ch.peers[id]; !ok {
			delete(c.strategyPeers, id)
			c.log.Info("strategy mismatch over", "peer", id)
		}
	}
	ids := make([]string, 0, len(ch.peers))
	for id := range ch.peers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		name := ch.peers[id]
		if c.strategyPeers[id] == name {
			continue
		}
		if c.strategyPeers == nil {
			c.strategyPeers = map[string]string{}
		}
		c.strategyPeers[id] = name
		err := &StrategyMismatchError{Member: c.id, Strategy: c.strategy.Name(), Peer: id, PeerStrategy: name,
			Oldest: ch.oldest, InForce: inForce}
		c.log.Warn("a member of the group publishes another assignment strategy", "error", err)
		c.report(err)
	}
}

// strategyMismatchesLocked lists the peers publishing another strategy,
// sorted. c.mu must be held.
func (v *groupView) strategyMismatchesLocked() []string {
	if len(v.strategyPeers) == 0 {
		return nil
	}
	out := make([]string, 0, len(v.strategyPeers))
	for id := range v.strategyPeers {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// strategyConflictsLocked returns one *StrategyMismatchError per peer
// publishing another strategy, sorted by peer, as they were reported.
// c.mu must be held.
func (c *Consumer) strategyConflictsLocked() []StrategyMismatchError {
	ids := c.strategyMismatchesLocked()
	if len(ids) == 0 {
		return nil
	}
	out := make([]StrategyMismatchError, 0, len(ids))
	for _, id := range ids {
		out = append(out, StrategyMismatchError{Member: c.id, Strategy: c.strategy.Name(), Peer: id,
			PeerStrategy: c.strategyPeers[id], Oldest: c.strategyOldest, InForce: c.strategyInForce})
	}
	return out
}

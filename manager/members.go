package manager

import (
	"errors"
	"fmt"
	"sort"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager/assign"
	"github.com/zkgroup/zkgroup/subscription"
)

// member is a group member as read from its ids node.
type member struct {
	id  string
	sub *subscription.Subscription // nil when unreadable
	err error                      // why it is unreadable (wraps ErrBadRegistration)
	// strategy is the strategy name it publishes ("" none: a JVM
	// consumer, an older zkgroup, or unreadable); czxid is the creation
	// zxid of its node, which orders the members by age.
	strategy string
	czxid    int64
	// streams is the registration's subscription: the stream count (the
	// old consumer's threads) per topic or wildcard expression.
	streams map[string]int
}

// readMembers lists the group's members (setting a child watch) and reads
// their registrations, in one multiRead (zkconn.Session.GetMany). A
// member whose registration is malformed, or longer than this member
// reads (Config.ZooKeeperMaxReply), is kept with a nil subscription (it
// is given nothing) and its error.
func readMembers(s *zkconn.Session, group string) ([]member, <-chan zk.Event, error) {
	ids, _, ch, err := s.ChildrenW(zkdata.IDsPath(group))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(ids)
	paths := make([]string, len(ids))
	for i, id := range ids {
		paths[i] = zkdata.IDPath(group, id)
	}
	regs, err := s.GetMany(paths)
	if err != nil {
		return nil, ch, err
	}
	out := make([]member, 0, len(ids))
	for i, id := range ids {
		data, stat, err := regs[i].Data, regs[i].Stat, regs[i].Err
		if errors.Is(err, zk.ErrNoNode) {
			continue // left meanwhile; the watch fires again
		}
		if errors.Is(err, ErrReplyTooLarge) {
			// Longer than this member reads (Config.ZooKeeperMaxReply):
			// like a malformed registration, it gets nothing from here.
			out = append(out, member{id: id, err: fmt.Errorf("%w: %w", ErrBadRegistration, err)})
			continue
		}
		if err != nil {
			return nil, ch, err
		}
		reg, err := zkdata.ParseMemberRegistration(id, data)
		if err != nil {
			out = append(out, member{id: id, err: fmt.Errorf("%w: %w", ErrBadRegistration, err)})
			continue
		}
		sub, err := subscription.FromRegistration(reg.Pattern, reg.Subscription)
		if err != nil {
			// %v: the cause wraps ErrConfig, and a peer's unreadable
			// registration is not this member's bad config.
			out = append(out, member{id: id, err: fmt.Errorf("%w: subscription: %v", ErrBadRegistration, err)})
			continue
		}
		out = append(out, member{id: id, sub: sub, strategy: reg.Strategy, czxid: stat.Czxid, streams: reg.Subscription})
	}
	return out, ch, nil
}

// assignMembers turns members into assign.Members over the known topics.
func assignMembers(members []member, topics []string) []assign.Member {
	out := make([]assign.Member, 0, len(members))
	for _, m := range members {
		am := assign.Member{ID: m.id, Topics: []string{}}
		if m.sub != nil {
			am.Topics = m.sub.Filter(topics)
		}
		out = append(out, am)
	}
	return out
}

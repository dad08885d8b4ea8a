package manager

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

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
	// assignment: the version of the group's assignment node it computes
	// from (0: none; see storedAssignment).
	assignment int
	// streams is the registration's subscription: the stream count (the
	// old consumer's threads) per topic or wildcard expression.
	streams map[string]int
	// away: not registered, kept in the group by its restart marker
	// (Config.RestartGrace) for grace; version is the marker's.
	away    bool
	grace   time.Duration
	version int32
}

// readMembers lists the group's members (setting a child watch on the
// registrations, and one on the restart markers) and reads their
// registrations: those cache holds under the session epoch as they are,
// the others with a data watch (see registrations; a nil cache reads
// them all in one multiRead, zkconn.Session.GetMany). A member whose
// registration is malformed, or longer than this member reads
// (Config.ZooKeeperMaxReply), is kept with a nil subscription (it is given
// nothing) and its error. A restart marker without a registration is a
// member away (see Config.RestartGrace), with the registration its marker
// holds.
func readMembers(s *zkconn.Session, epoch uint64, group string, cache *registrations) ([]member, <-chan zk.Event, <-chan zk.Event, error) {
	// The two lists are read at once: one round trip.
	var (
		markers []string
		sch     <-chan zk.Event
		serr    error
		read    sync.WaitGroup
	)
	read.Go(func() { markers, _, sch, serr = s.ChildrenW(zkdata.StaticPath(group)) })
	ids, _, ch, err := s.ChildrenW(zkdata.IDsPath(group))
	read.Wait()
	if err != nil {
		return nil, nil, nil, err
	}
	if errors.Is(serr, zk.ErrNoNode) {
		markers, sch, serr = nil, nil, nil // a group created before restart markers existed
	}
	if serr != nil {
		return nil, ch, nil, serr
	}
	sort.Strings(ids)
	paths := make([]string, len(ids), len(ids)+len(markers))
	registered := make(map[string]bool, len(ids))
	for i, id := range ids {
		paths[i] = zkdata.IDPath(group, id)
		registered[id] = true
	}
	var awayIDs []string
	for _, id := range markers {
		if !registered[id] {
			awayIDs = append(awayIDs, id)
			paths = append(paths, zkdata.StaticMemberPath(group, id))
		}
	}
	all := append(ids[:len(ids):len(ids)], awayIDs...)
	regs, err := cache.read(s, epoch, all, paths)
	if err != nil {
		return nil, ch, sch, err
	}
	out := make([]member, 0, len(paths))
	for i, id := range all {
		away := i >= len(ids)
		p := regs[i]
		if errors.Is(p.readErr, zk.ErrNoNode) {
			continue // left (or its marker went) meanwhile; the watch fires again
		}
		if errors.Is(p.readErr, ErrReplyTooLarge) {
			// Longer than this member reads (Config.ZooKeeperMaxReply):
			// like a malformed registration, it gets nothing from here.
			out = append(out, member{id: id, away: away, err: fmt.Errorf("%w: %w", ErrBadRegistration, p.readErr)})
			continue
		}
		if p.readErr != nil {
			return nil, ch, sch, p.readErr
		}
		if p.err != nil {
			out = append(out, member{id: id, away: away, err: p.err})
			continue
		}
		reg := p.reg
		m := member{id: id, sub: p.sub, strategy: reg.Strategy, czxid: p.czxid, streams: reg.Subscription,
			assignment: reg.Assignment}
		if away {
			m.away, m.grace, m.version = true, time.Duration(reg.RestartGraceMS)*time.Millisecond, p.version
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, ch, sch, nil
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

package admin

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/subscription"
)

// ZooKeeperView reads a group's view from ZooKeeper, read-only, through a
// session it borrows (the running member's) and never closes. Safe for
// concurrent use; Read blocks on ZooKeeper.
type ZooKeeperView struct {
	session func() (*zkconn.Session, error)
	group   string
	sub     *subscription.Subscription
	spec    string
	closed  atomic.Bool
}

var errViewClosed = errors.New("admin: group view closed")

// NewZooKeeperView returns a reader of group's members, owners and the
// topics spec (a subscription as configured) matches, through the session
// that session returns at each read (an error: none yet, the read fails
// with it).
func NewZooKeeperView(session func() (*zkconn.Session, error), group, spec string) (*ZooKeeperView, error) {
	sub, err := subscription.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("admin: group view: subscription %q: %w", spec, err)
	}
	return &ZooKeeperView{session: session, group: group, sub: sub, spec: spec}, nil
}

// Read reads the view: a ViewReader.
func (z *ZooKeeperView) Read() (GroupView, error) {
	if z.closed.Load() {
		return GroupView{}, errViewClosed
	}
	sess, err := z.session()
	if err != nil {
		return GroupView{}, err
	}
	return z.read(sess)
}

func (z *ZooKeeperView) read(sess *zkconn.Session) (GroupView, error) {
	v := GroupView{Subscription: z.spec, Owners: map[TopicPartition]string{}}
	var err error
	if v.Members, err = ops.Members(sess, z.group); err != nil {
		return v, err
	}
	owners, err := ops.Owners(sess, z.group)
	if err != nil {
		return v, err
	}
	for t, ps := range owners {
		for p, o := range ps {
			v.Owners[TopicPartition{t, p}] = o
		}
	}
	away, err := ops.AwayMembers(sess, z.group)
	if err != nil {
		return v, err
	}
	for _, a := range away {
		v.Away = append(v.Away, AwayMember{ID: a.ID, Grace: time.Duration(a.GraceSeconds * float64(time.Second)), MarkerWritten: a.MarkerWritten})
	}
	topics, err := ops.Topics(sess)
	if err != nil {
		return v, err
	}
	for _, t := range z.sub.Filter(topics) {
		ps, err := ops.Partitions(sess, t)
		if errors.Is(err, ops.ErrNoTopic) {
			continue // deleted meanwhile
		}
		if err != nil {
			return v, err
		}
		v.Topics = append(v.Topics, t)
		for _, p := range ps {
			v.Partitions = append(v.Partitions, TopicPartition{t, p})
		}
	}
	sort.Strings(v.Members)
	return v, nil
}

// Close makes later reads fail; it leaves the session open (its owner
// closes it) and does not wait for a read under way.
func (z *ZooKeeperView) Close() { z.closed.Store(true) }

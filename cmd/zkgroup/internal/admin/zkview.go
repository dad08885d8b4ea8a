package admin

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/subscription"
)

// ZooKeeperView reads a group's view from ZooKeeper, read-only, through a
// session of its own (dialed on first use, and again after a read
// failed). Safe for concurrent use; Read blocks on ZooKeeper.
type ZooKeeperView struct {
	dial  func() (*zkconn.Session, error)
	group string
	sub   *subscription.Subscription
	spec  string

	mu     sync.Mutex
	sess   *zkconn.Session
	closed bool
}

var errViewClosed = errors.New("admin: group view closed")

// NewZooKeeperView returns a reader of group's members, owners and the
// topics spec (a subscription as configured) matches, through sessions
// that dial opens (with the daemon's ZooKeeper address, credentials and
// TLS). It does not dial yet.
func NewZooKeeperView(dial func() (*zkconn.Session, error), group, spec string) (*ZooKeeperView, error) {
	sub, err := subscription.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("admin: group view: subscription %q: %w", spec, err)
	}
	return &ZooKeeperView{dial: dial, group: group, sub: sub, spec: spec}, nil
}

// Read reads the view: a ViewReader. Reads are not meant to overlap (the
// Viewer makes one at a time); Close may run during one and ends it.
func (z *ZooKeeperView) Read() (GroupView, error) {
	z.mu.Lock()
	sess, closed := z.sess, z.closed
	z.mu.Unlock()
	if closed {
		return GroupView{}, errViewClosed
	}
	if sess == nil {
		s, err := z.dial()
		if err != nil {
			return GroupView{}, err
		}
		z.mu.Lock()
		if z.closed {
			z.mu.Unlock()
			s.Close()
			return GroupView{}, errViewClosed
		}
		z.sess, sess = s, s
		z.mu.Unlock()
	}
	v, err := z.read(sess)
	if err != nil {
		z.mu.Lock()
		if z.sess == sess { // dial again next time
			z.sess.Close()
			z.sess = nil
		}
		z.mu.Unlock()
	}
	return v, err
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

// Close closes the session, if one is open; reads after it fail. It
// does not wait for a read under way.
func (z *ZooKeeperView) Close() {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.closed = true
	if z.sess != nil {
		z.sess.Close()
		z.sess = nil
	}
}

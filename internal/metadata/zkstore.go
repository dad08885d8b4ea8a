package metadata

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// zkStore is the store over a zkconn.Session: the member's own
// coordination session (OpenSession), which it leaves open. Every go-zookeeper value stays inside this file.
//
// A watch costs no goroutine: the store follows each watched node with a
// node-event hook of the session (Session.OnNodeEvent), registered before
// the first read that arms a watch on it, and drops go-zookeeper's watch
// channel (go-zookeeper buffers the one event it sends and closes it).
// The hooks see the events of every watch on their node, the store's own
// and any other user's of the same session: an event of someone else's
// watch only costs a read. When the session expires (or is closed),
// go-zookeeper drops every watch with EventNotWatching, which fires every
// key, so that everything is read and armed again on the new session;
// after a reconnect within the session, go-zookeeper sets the watches again
// by itself and the server fires those whose node changed meanwhile.
type zkStore struct {
	s    *zkconn.Session
	fire func(watchKey)

	mu     sync.Mutex
	hooks  map[watchKey]func() // removers of the node-event hooks
	closed bool
}

func newZKStore(s *zkconn.Session, fire func(watchKey)) *zkStore {
	return &zkStore{s: s, fire: fire, hooks: map[watchKey]func(){}}
}

// hook makes sure the events of the node of k reach fire.
func (z *zkStore) hook(k watchKey, path string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.closed || z.hooks[k] != nil {
		return
	}
	z.hooks[k] = z.s.OnNodeEvent(path, func(ev zk.Event) {
		// Runs on go-zookeeper's receive goroutine (or its closing one):
		// fire does not block.
		if fires(k, ev) {
			z.fire(k)
		}
	})
}

// unhook removes the hook of k (its node is gone and no watch of the store
// is pending on it).
func (z *zkStore) unhook(k watchKey) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if rm := z.hooks[k]; rm != nil {
		rm()
		delete(z.hooks, k)
	}
}

// fires reports whether ev ends the watch of k: a child watch on the
// topic list, a data watch on a topic node, or any watch dropped by the
// client because the session expired. Watches dropped because the
// session's owner closed it need no new read: the Watcher is closed next.
func fires(k watchKey, ev zk.Event) bool {
	switch ev.Type {
	case zk.EventNodeDeleted:
		return true
	case zk.EventNotWatching:
		return !errors.Is(ev.Err, zk.ErrClosing)
	case zk.EventNodeChildrenChanged:
		return k.root
	case zk.EventNodeDataChanged:
		return !k.root
	}
	return false
}

func (z *zkStore) topics(watch bool) ([]string, bool, error) {
	if !watch {
		names, _, err := z.s.Children(topicsPath)
		return names, false, zkTranslate(err)
	}
	k := watchKey{root: true}
	z.hook(k, topicsPath)
	names, _, _, err := z.s.ChildrenWFull(topicsPath)
	if err != nil {
		return nil, false, zkTranslate(err)
	}
	return names, true, nil
}

func (z *zkStore) partitions(topic string, watch bool, had int64) ([]partMeta, int64, bool, error) {
	path := topicPath(topic)
	var (
		data  []byte
		st    *zk.Stat
		err   error
		armed bool
	)
	if watch {
		k := watchKey{topic: topic}
		z.hook(k, path)
		data, st, _, err = z.s.GetWFull(path)
		armed = err == nil
		if errors.Is(err, zk.ErrNoNode) {
			z.unhook(k) // no watch is set on a missing node
		}
	} else {
		data, st, err = z.s.Get(path)
	}
	if err != nil {
		return nil, 0, armed, zkTranslate(err)
	}
	var version int64
	if st != nil {
		version = st.Mzxid
	}
	if had != 0 && had == version {
		return nil, version, armed, nil // unchanged: no decoding
	}
	parts, err := decodeTopic(topic, data)
	return parts, version, armed, err
}

// partitionsMany's versions are the nodes' Mzxid: the zxid of the
// transaction that last wrote the data (a node created again has a new
// one too).
func (z *zkStore) partitionsMany(topics []string, had []int64) ([]nodeRead, error) {
	paths := make([]string, len(topics))
	for i, t := range topics {
		paths[i] = topicPath(t)
	}
	got, err := z.s.GetMany(paths)
	if err != nil {
		return nil, err
	}
	out := make([]nodeRead, len(topics))
	for i, g := range got {
		if g.Err != nil {
			out[i].err = zkTranslate(g.Err)
			continue
		}
		out[i].version = g.Stat.Mzxid
		if had != nil && had[i] != 0 && had[i] == g.Stat.Mzxid {
			out[i].same = true // a resync of a node that did not change: no decoding
			continue
		}
		out[i].parts, out[i].err = decodeTopic(topics[i], g.Data)
	}
	return out, nil
}

// close removes the store's hooks, and closes the session if Open dialled
// it; go-zookeeper keeps the session's pending watches (a buffered channel
// each) until they fire or the session ends. It is idempotent.
func (z *zkStore) close() error {
	z.mu.Lock()
	if z.closed {
		z.mu.Unlock()
		return nil
	}
	z.closed = true
	for k, rm := range z.hooks {
		rm()
		delete(z.hooks, k)
	}
	z.mu.Unlock()
	return nil
}

// zkTranslate maps go-zookeeper's "no node" error to errNoNode and keeps
// every other error.
func zkTranslate(err error) error {
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %w", errNoNode, err)
	}
	return err
}

// decodeTopic decodes a topic node (zkdata.ParseTopic) into its partitions,
// sorted by id. Kafka numbers a topic's partitions 0..n-1: a node whose ids
// are not exactly those is malformed, as is one zkdata refuses. It is pure.
func decodeTopic(topic string, data []byte) ([]partMeta, error) {
	tp, err := zkdata.ParseTopic(topic, data)
	if err != nil {
		return nil, err
	}
	out := make([]partMeta, len(tp.Partitions))
	for id, replicas := range tp.Partitions {
		if int(id) >= len(out) {
			return nil, &zkdata.MalformedError{Node: "topic " + strconv.Quote(topic), Field: "partitions key",
				Value: strconv.Itoa(int(id)), Reason: fmt.Sprintf("partition ids of a topic of %d partitions must be 0..%d", len(out), len(out)-1)}
		}
		out[id] = partMeta{ID: id, Replicas: replicas}
	}
	return out, nil
}

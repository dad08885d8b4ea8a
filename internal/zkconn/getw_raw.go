package zkconn

import "github.com/go-zookeeper/zk"

// GetWFull reads a node and sets a data watch like GetW, but hands out
// go-zookeeper's own watch channel: event paths keep the chroot. It costs
// no goroutine per watch (GetW's path translation does), which matters to
// callers that hold one watch per owned partition and never read the
// event's path.
func (s *Session) GetWFull(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	sent, err := s.await()
	if err != nil {
		return nil, nil, nil, err
	}
	full := s.fullKept(p)
	if err := s.replies.refused(full); err != nil {
		return nil, nil, nil, err
	}
	d, st, ch, err := s.conn.GetW(full)
	s.note(sent, err)
	return d, st, ch, s.replies.overCap(full, err)
}

// ChildrenWFull lists a node's children and sets a child watch like
// ChildrenW, but hands out go-zookeeper's own watch channel (event paths
// keep the chroot) and so costs no goroutine per watch. A caller that
// follows the node with OnNodeEvent may drop the channel: go-zookeeper
// sends it one event into its buffer and closes it.
func (s *Session) ChildrenWFull(p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	sent, err := s.await()
	if err != nil {
		return nil, nil, nil, err
	}
	full := s.fullKept(p)
	if err := s.replies.refused(full); err != nil {
		return nil, nil, nil, err
	}
	c, st, ch, err := s.conn.ChildrenW(full)
	s.note(sent, err)
	return c, st, ch, s.replies.overCap(full, err)
}

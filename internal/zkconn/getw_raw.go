package zkconn

import "github.com/go-zookeeper/zk"

// GetWFull reads a node and sets a data watch like GetW, but hands out
// go-zookeeper's own watch channel: event paths keep the chroot. It costs
// no goroutine per watch (GetW's path translation does), which matters to
// callers that hold one watch per owned partition and never read the
// event's path.
func (s *Session) GetWFull(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	return capped(s, s.fullKept(p), func(full string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
		return s.conn.GetW(full)
	})
}

// ChildrenWFull lists a node's children and sets a child watch like
// ChildrenW, but hands out go-zookeeper's own watch channel (event paths
// keep the chroot) and so costs no goroutine per watch. A caller that
// follows the node with OnNodeEvent may drop the channel: go-zookeeper
// sends it one event into its buffer and closes it.
func (s *Session) ChildrenWFull(p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	return capped(s, s.fullKept(p), func(full string) ([]string, *zk.Stat, <-chan zk.Event, error) {
		return s.conn.ChildrenW(full)
	})
}

package zkconn

import "github.com/go-zookeeper/zk"

// GetWFull reads a node and sets a data watch like GetW, but hands out
// go-zookeeper's own watch channel: event paths keep the chroot. It costs
// no goroutine per watch (GetW's path translation does), which matters to
// callers that hold one watch per owned partition and never read the
// event's path.
func (s *Session) GetWFull(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	sent := s.await()
	d, st, ch, err := s.conn.GetW(s.full(p))
	s.note(sent, err)
	return d, st, ch, err
}

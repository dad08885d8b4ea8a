package manager

import (
	"github.com/zkgroup/zkgroup/internal/sessionlink"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// The daemon reads its group view (members, owner nodes, topics) through
// the consumer's ZooKeeper session, one connection per member, by way of
// sessionlink: the session is no public API.
func init() {
	sessionlink.Register(func(consumer any) *zkconn.Session {
		if c, ok := consumer.(*Consumer); ok && c != nil {
			return c.session
		}
		return nil
	})
}

// Package sessionlink gives the daemon (cmd/zkgroup) the ZooKeeper session
// of a running manager.Consumer, which the public API does not expose, so
// that the daemon's group view reads through the member's one connection
// instead of a second session. manager registers the accessor in its init
// (it imports this package, which imports nothing of manager).
package sessionlink

import "github.com/zkgroup/zkgroup/internal/zkconn"

var session func(consumer any) *zkconn.Session

// Register sets the function behind Session. manager calls it in its init.
func Register(f func(consumer any) *zkconn.Session) { session = f }

// Session returns consumer's (a *manager.Consumer) ZooKeeper session, or
// false for anything else. The consumer owns the session: the caller only
// reads through it, never closes it, and stops using it once the consumer
// is closed (its calls then fail with zkconn.ErrClosed).
func Session(consumer any) (*zkconn.Session, bool) {
	if session == nil {
		return nil, false
	}
	s := session(consumer)
	return s, s != nil
}

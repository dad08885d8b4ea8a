package zkconn

import (
	"net"
	"time"
)

// cappedConn caps every deadline go-zookeeper sets on a connection at
// limit() from now. go-zookeeper v1.0.4 waits ten times its receive
// timeout (10 x 2/3 of the session timeout: 40 s for a 6 s session) for
// the answer to its connect request, and meanwhile neither tries another
// connection nor fails the requests queued behind it. A server that
// accepts the connection but never answers it (a ZooKeeper starting or
// stopping on a loaded machine) so held the session past its expiry
// although the server was back within a second or two, and held every
// request for those 40 s. Capped at 2/3 of the session timeout (go-zookeeper's
// own bound for any other read, the Java client's bound for a connect
// being the session timeout divided among the servers), the connection
// fails in time to reconnect, and the session resumes, once the server
// answers. Deadlines already shorter, and clearing one (the zero time),
// pass unchanged.
type cappedConn struct {
	net.Conn
	limit func() time.Duration
}

func (c *cappedConn) capped(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	if max := time.Now().Add(c.limit()); t.After(max) {
		return max
	}
	return t
}

func (c *cappedConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.capped(t)) }

func (c *cappedConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.capped(t))
}

func (c *cappedConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.capped(t))
}

package zkconn

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ZooKeeper's opcodes for re-sending a session's watches and for ending
// the session.
const (
	opSetWatches   = 101
	opCloseSession = -11
)

// gatedConn holds back a reconnected session's replies until go-zookeeper
// has re-sent its watches. On every reconnect go-zookeeper v1.0.4 starts
// its receive loop and only then reads the session's last zxid, without a
// lock, to re-send the watches (sendSetWatches), while the receive loop
// writes the last zxid with every reply (an upstream data race,
// go-zookeeper/zk PR #35). A request queued while the connection was down
// goes out first, so its reply could arrive in between.
//
// go-zookeeper reads the last zxid only when it has watches to re-send,
// and then writes a setWatches request right after. So, once the connect
// reply has been read, the first read of a reply waits until this
// connection has written a setWatches request (which orders go-zookeeper's
// read of the zxid before the receive loop's write), or settleTime has
// passed (there were no watches to re-send, nothing reads the zxid). The
// first connection of a session has no watches; it is not gated.
//
// It also half-closes the connection once go-zookeeper has written the
// session's close request, and keeps go-zookeeper from seeing a failed
// write (see Write).
type gatedConn struct {
	net.Conn
	closeWrite func() error  // the raw connection's CloseWrite; nil if it has none
	open       chan struct{} // closed once replies may be read
	openOnce   sync.Once
	closed     chan struct{}
	shut       sync.Once
	closeSent  atomic.Bool // the session's close request was written

	mu        sync.Mutex
	handshake int // bytes of the connect reply left to read; -1 until its length is known
	lenBuf    []byte
	timer     *time.Timer
	gated     bool // whether reads after the connect reply wait for open
}

// newGatedConn wraps c; raw is the connection under c's wrappers, which
// Write half-closes after the close request (halfCloser).
func newGatedConn(c, raw net.Conn, gated bool) *gatedConn {
	g := &gatedConn{Conn: c, open: make(chan struct{}), closed: make(chan struct{}), handshake: -1, gated: gated}
	g.closeWrite = halfCloser(raw)
	if !gated {
		g.openOnce.Do(func() { close(g.open) })
	}
	return g
}

func (g *gatedConn) release() { g.openOnce.Do(func() { close(g.open) }) }

// Read reads the connect reply freely; later reads wait for the gate.
func (g *gatedConn) Read(p []byte) (int, error) {
	g.mu.Lock()
	inHandshake := g.handshake != 0
	g.mu.Unlock()
	if !inHandshake {
		select {
		case <-g.open:
		case <-g.closed:
			return 0, net.ErrClosed
		}
		return g.Conn.Read(p)
	}
	n, err := g.Conn.Read(p)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.account(p[:n])
	return n, err
}

// account counts b against the connect reply: its 4-byte length, then
// that many bytes. When the reply is complete the settle timer starts.
func (g *gatedConn) account(b []byte) {
	for len(b) > 0 && g.handshake != 0 {
		if g.handshake < 0 {
			k := min(4-len(g.lenBuf), len(b))
			g.lenBuf = append(g.lenBuf, b[:k]...)
			b = b[k:]
			if len(g.lenBuf) == 4 {
				g.handshake = int(binary.BigEndian.Uint32(g.lenBuf))
			}
			continue
		}
		k := min(g.handshake, len(b))
		g.handshake -= k
		b = b[k:]
	}
	if g.handshake == 0 && g.gated && g.timer == nil {
		g.timer = time.AfterFunc(settleTime, g.release)
	}
}

// Write writes p (go-zookeeper writes one whole packet per call: length,
// xid, opcode, body) and opens the gate after a setWatches request.
//
// After the session's close request it half-closes the connection: the
// server reads the request, then the end of the stream, and closes its
// side at once, so go-zookeeper's receive loop ends (and Close returns)
// without waiting for the close's reply, which comes only once the close
// is committed, behind the other sessions' writes and a disk sync.
// ZooKeeper processes a close request it has read even after the
// connection is gone (a closeSession is never dropped as stale), so the
// session's ephemeral nodes go as they would have, moments later. A
// server that kept its side open would answer the close all the same:
// Close then waits for the reply, as before.
//
// Nothing is written after the close request, and a write that fails
// closes the connection: either way the write is reported done, and the
// connection's end fails the request, once (zk.ErrConnectionClosed;
// zk.ErrClosing after Close).
// go-zookeeper v1.0.4 answers a failed write itself and leaves the request
// registered, so the connection's end answers it again. A request that
// raced Close was already answered by go-zookeeper's queueRequest, and
// nobody reads its channel (room for two): the third answer would block
// go-zookeeper's connection goroutine for good. A re-sent credential's
// channel has room for one: a failed write there would block it at the
// second, and the session would never reconnect. (On the half-closed
// connection, any write after the close request would fail.)
func (g *gatedConn) Write(p []byte) (int, error) {
	if g.closeSent.Load() {
		return len(p), nil
	}
	n, err := g.Conn.Write(p)
	if err != nil {
		g.Close() // go-zookeeper's receive loop ends, and with it the connection
		return len(p), nil
	}
	if len(p) >= 12 {
		switch int32(binary.BigEndian.Uint32(p[8:12])) {
		case opSetWatches:
			g.release()
		case opCloseSession:
			g.closeSent.Store(true)
			if n == len(p) && g.closeWrite != nil {
				_ = g.closeWrite() // on failure the reply still ends the loop
			}
		}
	}
	return n, nil
}

type closeWriter interface{ CloseWrite() error }

// halfCloser returns what ends c's writing side: a TCP connection's
// CloseWrite (a FIN); for TLS, the close_notify alert and then the FIN of
// the connection under it (tls.Conn.CloseWrite sends only the alert). Nil
// for a connection that has neither.
func halfCloser(c net.Conn) func() error {
	if tc, ok := c.(*tls.Conn); ok {
		under, ok := tc.NetConn().(closeWriter)
		if !ok {
			return tc.CloseWrite
		}
		return func() error {
			return errors.Join(tc.CloseWrite(), under.CloseWrite())
		}
	}
	if cw, ok := c.(closeWriter); ok {
		return cw.CloseWrite
	}
	return nil
}

// Close closes the connection and wakes a gated read.
func (g *gatedConn) Close() error {
	g.shut.Do(func() {
		close(g.closed)
		g.mu.Lock()
		if g.timer != nil {
			g.timer.Stop()
		}
		g.mu.Unlock()
	})
	return g.Conn.Close()
}

// connLine is what a Session keeps of its connections: the latest one
// dialled, and whether the session is closing (no further dial).
type connLine struct {
	closing atomic.Bool
	// latest is what go-zookeeper reads: the gatedConn, or in plain mode
	// the dialled connection itself.
	latest atomic.Pointer[net.Conn]
	side   atomic.Pointer[sideConn] // the latest connection's, for GetMany; nil in plain mode
}

// hangUp closes the latest connection, waking go-zookeeper from a read.
func (l *connLine) hangUp() {
	if c := l.latest.Load(); c != nil {
		(*c).Close()
	}
}

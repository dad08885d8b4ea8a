package zkconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgroup/zkgroup/internal/framerelay"
)

// errSideClosed: the connection a side request went out on failed or was
// closed before its reply came; the server may or may not have read it.
var errSideClosed = errors.New("zkconn: the connection closed before the reply")

// sideXidTop is the highest xid of a side request. go-zookeeper v1.0.4
// numbers its requests from 1 up (masked to 31 bits) and uses -1 (watch
// events), -2 (pings), -4 (auth) and -8 (setWatches); a reply whose xid
// is at most sideXidTop can only answer a side request.
const sideXidTop = -1 << 16

// sideConn lets the Session send requests that go-zookeeper v1.0.4 has no
// call for (ZooKeeper 3.6's multiRead) on the session's own connection,
// and takes their replies out of the stream before go-zookeeper reads it.
//
// Writes: go-zookeeper writes one whole request per Write; a side request
// is one Write too, and a mutex keeps the two from interleaving. The
// write deadline go-zookeeper sets is kept and restored around a side
// request's own.
//
// Reads: go-zookeeper's receive goroutine (one reader at a time, the
// connect reply first) reads through Read, which follows the framing
// (a 4-byte length, then that many bytes: xid, zxid, error, body). A
// frame whose xid is a side request's is read whole and handed to its
// waiter, and Read goes on to the next frame; every other byte passes
// unchanged. A side reply thus costs go-zookeeper nothing, and it never
// sees one (it would only log it: it drops replies with unknown negative
// xids).
//
// A side request is written only once the connect reply has passed: the
// session exists on this connection. The first ones are the setWatches
// requests that set the session's own watches again (rawWatches), written
// as soon as the connect reply says the session lives. When the
// connection fails or closes, every side request still waiting gets
// errSideClosed.
//
// Pings, go-zookeeper's and the Session's own (ping), are noted in pings
// as they are written and credited as their replies are read: see
// pingLog.
type sideConn struct {
	net.Conn
	limit int // the largest side reply read; a longer one is skipped and fails its request
	pings *pingLog
	raw   *rawWatches // set again first thing on a connection of a live session

	wmu       sync.Mutex
	wdl       time.Time // go-zookeeper's write deadline, restored after a side request
	closeSent bool      // go-zookeeper wrote the session's close request: nothing of ours follows it

	connected atomic.Bool // the connect reply (no xid) has been passed on

	mu      sync.Mutex
	pending map[int32]chan sideReply
	dead    error // the connection failed or closed; no side request is written

	// The receive side, used by go-zookeeper's one reader at a time.
	head  [8]byte
	relay framerelay.Relay // what of the frame being read goes on to go-zookeeper
}

// rawRewatchWrite bounds the write of the raw watches' setWatches
// requests on a new connection.
const rawRewatchWrite = 5 * time.Second

// sideReply is a side request's reply: its frame after the length (xid,
// zxid, error, body), or why none came.
type sideReply struct {
	frame []byte
	err   error
}

var sideXids atomic.Uint32

// nextSideXid returns an xid at most sideXidTop.
func nextSideXid() int32 {
	return sideXidTop - int32(sideXids.Add(1)&0x3fff_ffff)
}

func newSideConn(c net.Conn, limit int, pings *pingLog, raw *rawWatches) *sideConn {
	return &sideConn{Conn: c, limit: limit, pings: pings, raw: raw, pending: map[int32]chan sideReply{}}
}

// Write writes p, one go-zookeeper request, whole; a ping is noted first.
func (c *sideConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if isPing(p) {
		c.pings.writtenTheirs()
	}
	if len(p) >= 12 && int32(binary.BigEndian.Uint32(p[8:12])) == opCloseSession {
		c.closeSent = true
	}
	return c.Conn.Write(p)
}

// SetWriteDeadline sets go-zookeeper's write deadline, which a side
// request restores after its write.
func (c *sideConn) SetWriteDeadline(t time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wdl = t
	return c.Conn.SetWriteDeadline(t)
}

// SetDeadline sets both deadlines; see SetWriteDeadline.
func (c *sideConn) SetDeadline(t time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wdl = t
	return c.Conn.SetDeadline(t)
}

// send writes req, a whole request frame whose xid is xid (from
// nextSideXid), within the deadline, and returns where its reply will
// come (see writeOwn for a failed write).
func (c *sideConn) send(xid int32, req []byte, deadline time.Time) (<-chan sideReply, error) {
	if !c.connected.Load() {
		return nil, errSideClosed
	}
	ch := make(chan sideReply, 1)
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		return nil, c.dead
	}
	c.pending[xid] = ch
	c.mu.Unlock()
	if err := c.writeOwn(req, deadline, nil); err != nil {
		c.forget(xid)
		return nil, err
	}
	return ch, nil
}

// writeOwn writes frame, a whole request of the Session's own, within
// the deadline, and restores go-zookeeper's write deadline after it;
// noted, when not nil, runs just before the write, under the write lock
// (in wire order). A failed write closes the connection: part of a
// request may have gone out, and go-zookeeper reconnects. Once
// go-zookeeper wrote the session's close request (after which the
// connection is half-closed, see gatedConn) nothing is written:
// errSideClosed.
func (c *sideConn) writeOwn(frame []byte, deadline time.Time, noted func()) error {
	c.wmu.Lock()
	if c.closeSent {
		c.wmu.Unlock()
		return errSideClosed
	}
	err := c.Conn.SetWriteDeadline(deadline)
	if err == nil {
		if noted != nil {
			noted()
		}
		_, err = c.Conn.Write(frame)
	}
	_ = c.Conn.SetWriteDeadline(c.wdl)
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("%w: %w", errSideClosed, err))
		c.Conn.Close()
	}
	return err
}

// ping writes a ping within the deadline, noted in the pingLog, unless
// the connection cannot take one yet (no session on it) or any more (see
// writeOwn for a failed write).
func (c *sideConn) ping(deadline time.Time) {
	if !c.connected.Load() {
		return
	}
	c.mu.Lock()
	dead := c.dead
	c.mu.Unlock()
	if dead != nil {
		return
	}
	_ = c.writeOwn(pingFrame, deadline, c.pings.written) // a failure is the connection's: go-zookeeper reconnects
}

// forget drops the waiter of xid (its caller gave up); the reply, if it
// comes, is still taken out of the stream.
func (c *sideConn) forget(xid int32) {
	c.mu.Lock()
	delete(c.pending, xid)
	c.mu.Unlock()
}

// fail ends the connection for side requests: every waiter gets err.
func (c *sideConn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead == nil {
		c.dead = err
	}
	for xid, ch := range c.pending {
		ch <- sideReply{err: c.dead}
		delete(c.pending, xid)
	}
}

// Close fails the side requests waiting and closes the connection.
func (c *sideConn) Close() error {
	c.fail(errSideClosed)
	return c.Conn.Close()
}

// Read returns the stream's next bytes, without the side replies.
func (c *sideConn) Read(p []byte) (int, error) {
	n, err := c.read(p)
	if err != nil {
		c.fail(fmt.Errorf("%w: %w", errSideClosed, err))
	}
	return n, err
}

func (c *sideConn) read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return c.relay.Read(c.Conn, p, c.nextFrame)
}

// nextFrame reads the start of the next frame: the connect reply and the
// replies of go-zookeeper's requests go on (c.relay), a side reply is
// taken.
func (c *sideConn) nextFrame() error {
	if !c.connected.Load() { // the connect reply: a length, then the reply, no xid
		if _, err := io.ReadFull(c.Conn, c.head[:4]); err != nil {
			return err
		}
		size := int(binary.BigEndian.Uint32(c.head[:4]))
		if size < 16 || size > 1024 { // not a connect reply of ours to look into: pass it on
			c.relay.Out, c.relay.Left = c.head[:4], size
			c.connected.Store(true)
			return nil
		}
		reply := make([]byte, 4+size)
		copy(reply, c.head[:4])
		if _, err := io.ReadFull(c.Conn, reply[4:]); err != nil {
			return err
		}
		c.relay.Out = reply
		c.connected.Store(true)
		// protocol version, timeout, session id: a live session has both
		// of the latter. Its raw watches go first, before anything of
		// go-zookeeper's or ours.
		if timeout, id := binary.BigEndian.Uint32(reply[8:12]), binary.BigEndian.Uint64(reply[12:20]); timeout > 0 && id != 0 && c.raw != nil {
			for _, f := range c.raw.frames() {
				if err := c.writeOwn(f, time.Now().Add(rawRewatchWrite), nil); err != nil {
					break // the connection is closed: the next one sets them
				}
			}
		}
		return nil
	}
	if _, err := io.ReadFull(c.Conn, c.head[:8]); err != nil {
		return err
	}
	size := int(binary.BigEndian.Uint32(c.head[:4]))
	xid := int32(binary.BigEndian.Uint32(c.head[4:8]))
	if xid > sideXidTop || size < 4 {
		if xid == pingXid {
			c.pings.replied()
		}
		c.relay.Out, c.relay.Left = c.head[:8], max(size-4, 0)
		return nil
	}
	return c.take(xid, size)
}

// take reads the rest of the side reply to xid, size bytes after its
// length, and hands it to its waiter, if any still waits.
func (c *sideConn) take(xid int32, size int) error {
	c.mu.Lock()
	ch := c.pending[xid]
	delete(c.pending, xid)
	c.mu.Unlock()
	if size > c.limit || ch == nil {
		if _, err := io.CopyN(io.Discard, c.Conn, int64(size-4)); err != nil {
			return err
		}
		if ch != nil {
			ch <- sideReply{err: fmt.Errorf("%w: a multiRead's reply is %d bytes, over the cap of %d", ErrReplyTooLarge, size, c.limit)}
		}
		return nil
	}
	frame := make([]byte, size)
	copy(frame, c.head[4:8])
	if _, err := io.ReadFull(c.Conn, frame[4:]); err != nil {
		ch <- sideReply{err: fmt.Errorf("%w: %w", errSideClosed, err)}
		return err
	}
	if c.raw != nil && size >= 12 {
		c.raw.sawZxid(int64(binary.BigEndian.Uint64(frame[4:12])))
	}
	ch <- sideReply{frame: frame}
	return nil
}

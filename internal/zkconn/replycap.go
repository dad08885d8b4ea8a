package zkconn

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/zkgroup/zkgroup"
	"github.com/zkgroup/zkgroup/internal/shrink"
)

// ErrReplyTooLarge (zkgroup.ErrReplyTooLarge): ZooKeeper's reply to a
// read is longer than the session's reply cap (Config.MaxReply). See
// ReplyTooLargeError.
var ErrReplyTooLarge = zkgroup.ErrReplyTooLarge

// ReplyTooLargeError is a read whose reply was over the session's reply
// cap. go-zookeeper v1.0.4 cannot read such a reply: it drops the
// connection (failing every request in flight), reconnects, and would
// drop it again at the next try. So the Session refuses further reads of
// the node, unsent, with this error, for as long as it lives. It unwraps
// to ErrReplyTooLarge. A plain value.
type ReplyTooLargeError struct {
	Op    string // "getData", "getChildren" or "getACL"
	Path  string // the node, without the chroot
	Size  int    // the reply's length in bytes (after its 4-byte length)
	Limit int    // the cap
	Field string // how the caller's configuration names the cap
}

// Error names the read, the sizes and the setting to raise.
func (e *ReplyTooLargeError) Error() string {
	return fmt.Sprintf("%v: %s %s: the reply is %d bytes, over the cap of %d set by %s",
		ErrReplyTooLarge, e.Op, e.Path, e.Size, e.Limit, e.Field)
}

// Unwrap returns ErrReplyTooLarge.
func (e *ReplyTooLargeError) Unwrap() error { return ErrReplyTooLarge }

// ZooKeeper's opcodes of the requests whose replies have no fixed bound:
// reads, and multi (a reply per op: the path of each node created).
const (
	opGetData      = 4
	opGetACL       = 6
	opGetChildren  = 8
	opGetChildren2 = 12
	opMulti        = 14
)

var unboundedOps = map[int32]string{opGetData: "getData", opGetACL: "getACL", opGetChildren: "getChildren", opGetChildren2: "getChildren", opMulti: "multi"}

// sentRead is a request in flight: its opcode's name and, for a read, its
// full path ("" for a multi).
type sentRead struct {
	op   string
	path string
}

// replyGuard is a connection that tells which read a reply over the cap
// answers. go-zookeeper writes one whole request per Write (length, xid,
// opcode, body) and reads each reply as its 4-byte length and then that
// many bytes; over the cap (WithMaxBufferSize) it reads only the length,
// then closes the connection. replyGuard notes the xid and path of each
// read it writes; it follows the replies' framing, and when a length is
// over the cap it reads the xid that follows (the server sends the whole
// reply at once) and reports the read it answers to tooLarge. Replies
// within the cap cost a few bytes of bookkeeping each.
type replyGuard struct {
	net.Conn
	limit    int
	tooLarge func(r sentRead, size int)

	mu      sync.Mutex
	pending map[int32]sentRead // reads written, by xid, until their reply's header is read
	peak    shrink.Peak        // of pending

	// The receive side, read by one goroutine at a time (go-zookeeper's
	// handshake, then its receive loop, started after it).
	connected bool    // the connect reply (no xid) was read
	head      [8]byte // a frame's length and xid
	nHead     int     // bytes of head read
	left      int     // bytes of the frame left after its head
	broken    error   // set once a reply over the cap was seen
}

func newReplyGuard(c net.Conn, limit int, tooLarge func(sentRead, int)) *replyGuard {
	return &replyGuard{Conn: c, limit: limit, tooLarge: tooLarge, pending: make(map[int32]sentRead)}
}

// Write writes p, one request, and notes it if it is a read.
func (g *replyGuard) Write(p []byte) (int, error) {
	if len(p) >= 16 {
		xid := int32(binary.BigEndian.Uint32(p[4:8]))
		op, ok := unboundedOps[int32(binary.BigEndian.Uint32(p[8:12]))]
		if ok && op == "multi" {
			g.mu.Lock()
			g.pending[xid] = sentRead{op: op}
			g.peak.Note(len(g.pending))
			g.mu.Unlock()
		} else if ok {
			// A read's path is the body's first field: a length and the bytes.
			if n := int(binary.BigEndian.Uint32(p[12:16])); n >= 0 && 16+n <= len(p) {
				g.mu.Lock()
				g.pending[xid] = sentRead{op: op, path: string(p[16 : 16+n])}
				g.peak.Note(len(g.pending))
				g.mu.Unlock()
			}
		}
	}
	return g.Conn.Write(p)
}

// Read reads and follows the framing of what it returns.
func (g *replyGuard) Read(p []byte) (int, error) {
	if g.broken != nil {
		return 0, g.broken
	}
	n, err := g.Conn.Read(p)
	g.follow(p[:n])
	return n, err
}

// follow accounts for b, the next bytes of the stream.
func (g *replyGuard) follow(b []byte) {
	for len(b) > 0 {
		if g.left > 0 {
			k := min(g.left, len(b))
			g.left -= k
			b = b[k:]
			continue
		}
		headLen := 8
		if !g.connected {
			headLen = 4 // the connect reply has no xid
		}
		k := min(headLen-g.nHead, len(b))
		copy(g.head[g.nHead:], b[:k])
		g.nHead += k
		b = b[k:]
		if g.nHead == 4 {
			size := int(binary.BigEndian.Uint32(g.head[:4]))
			if g.connected && size > g.limit {
				g.over(size)
				return
			}
			if !g.connected {
				g.connected, g.nHead, g.left = true, 0, size
				continue
			}
		}
		if g.nHead == 8 {
			size := int(binary.BigEndian.Uint32(g.head[:4]))
			xid := int32(binary.BigEndian.Uint32(g.head[4:8]))
			g.mu.Lock()
			delete(g.pending, xid)
			g.pending = shrink.Map(g.pending, &g.peak)
			g.mu.Unlock()
			g.nHead, g.left = 0, max(size-4, 0)
		}
	}
}

// over handles a reply length over the cap, just read: go-zookeeper
// gives up the connection after it. The xid follows the length; the read
// it answers is reported.
func (g *replyGuard) over(size int) {
	g.broken = fmt.Errorf("zkconn: a reply of %d bytes is over the cap of %d", size, g.limit)
	var xid [4]byte
	if _, err := io.ReadFull(g.Conn, xid[:]); err != nil {
		return
	}
	g.mu.Lock()
	r, ok := g.pending[int32(binary.BigEndian.Uint32(xid[:]))]
	g.mu.Unlock()
	if ok {
		g.tooLarge(r, size)
	}
}

// replyRefusals holds a Session's reads that were over its reply cap, by
// full path. Safe for concurrent use.
type replyRefusals struct {
	limit  int
	field  string
	chroot string
	log    *slog.Logger
	m      sync.Map // full path -> *ReplyTooLargeError
}

// note records that the read rd was answered with size bytes, over the
// cap. A multi's caller sees the connection drop (zk.ErrConnectionClosed;
// the server applied the multi or not); the cap is named in the log.
func (r *replyRefusals) note(rd sentRead, size int) {
	if rd.path == "" {
		r.log.Error("zkconn: a multi's reply was over the reply cap; its caller saw the connection drop",
			"size", size, "cap", r.limit, "setting", r.field)
		return
	}
	r.m.Store(rd.path, &ReplyTooLargeError{Op: rd.op, Path: stripChroot(r.chroot, rd.path), Size: size, Limit: r.limit, Field: r.field})
}

// refused returns the error of an earlier read of full over the cap, or
// nil.
func (r *replyRefusals) refused(full string) error {
	if e, ok := r.m.Load(full); ok {
		return e.(*ReplyTooLargeError)
	}
	return nil
}

// overCap is err, or the error of a read of full over the cap when err
// is the connection drop that the reply caused.
func (r *replyRefusals) overCap(full string, err error) error {
	if err == nil {
		return nil
	}
	if e := r.refused(full); e != nil {
		return e
	}
	return err
}

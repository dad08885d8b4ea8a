package zkconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
)

// ZooKeeper's opcode of multiRead (3.6 and later) and its error codes
// that GetMany tells apart.
const (
	opMultiRead       = 22
	errCodeUnimpl     = -6
	errCodeNoNode     = -101
	errCodeNoAuth     = -102
	errCodeBadArgs    = -8
	errCodeConnLoss   = -4
	errCodeSessExpire = -112
)

// multiReadOps is the most paths one multiRead carries: with an owner
// node's data (a member id, some 50 bytes) and its stat, a reply of about
// 32 KiB. GetMany sends its batches at once; ZooKeeper serves each in one
// pass, where single reads of the same nodes cost it a pass each (1,000
// owner nodes: about 3 ms in 4 batches against 80-130 ms, on an idle
// server of this machine).
const multiReadOps = 256

// singleReaders bounds the single reads in flight when the server has no
// multiRead.
const singleReaders = 64

// NodeData is one node's read by GetMany: its data and stat, or Err
// (zk.ErrNoNode, zk.ErrNoAuth, a *ReplyTooLargeError, or another error of
// the server's) and no data. ChildrenMany fills Children (and Err) only;
// ChildrenStats Children and Stat.
type NodeData struct {
	Data     []byte
	Stat     zk.Stat
	Children []string
	Err      error
}

// GetMany reads the nodes at paths (each without the chroot, as for Get)
// and returns their data in the same order. It sends them in batches of
// multiReadOps in ZooKeeper's multiRead request (3.6 and later), which
// the server answers in one pass per batch; go-zookeeper v1.0.4 has no
// call for it, so the session writes it on its own connection (see
// sideConn). It sets no watch. A node's own failure (no such node, no
// read permission) is in its NodeData; err is for the request: the
// connection failed or the session closed. The batches are not one
// snapshot: each is consistent in itself, as a read of each node would
// be.
//
// On a server that has no multiRead (it answers "unimplemented"), the
// session remembers it and reads each node on its own, singleReaders at
// a time. A batch whose reply is over the session's reply cap is read
// that way too, and so is every node on a session in plain mode (a
// go-zookeeper the side connection was not tested with: see
// checkGoZooKeeper): the same results, a round trip per node.
func (s *Session) GetMany(paths []string) ([]NodeData, error) {
	out := make([]NodeData, len(paths))
	if len(paths) == 0 {
		return out, nil
	}
	return out, s.readMany(opGetData, paths, out)
}

// ChildrenMany lists the children of the nodes at paths (each without the
// chroot, as for Children) and returns them in the same order, in
// NodeData.Children (Err: zk.ErrNoNode for a path that does not exist).
// It is GetMany's twin for children lists (multiRead getChildren
// operations, in batches sent at once; the same fallbacks): a member
// listing the owners of a hundred topics waits for one round trip, not a
// hundred. It sets no watch.
func (s *Session) ChildrenMany(paths []string) ([]NodeData, error) {
	out := make([]NodeData, len(paths))
	if len(paths) == 0 {
		return out, nil
	}
	return out, s.readMany(opGetChildren, paths, out)
}

// ChildrenStats lists the children of the nodes at paths (each without
// the chroot, as for Children) with each node's stat, taken by the same
// read (getChildren2: the list is the one of that Stat.Cversion), in
// NodeData.Children and Stat, in the same order (Err: zk.ErrNoNode for a
// path that does not exist). multiRead has no such operation: it sends a
// request per path, singleReaders at a time, in every mode. It sets no
// watch.
func (s *Session) ChildrenStats(paths []string) ([]NodeData, error) {
	out := make([]NodeData, len(paths))
	if len(paths) == 0 {
		return out, nil
	}
	return out, s.getEach(opGetChildren, paths, out)
}

// readMany reads paths with op (opGetData or opGetChildren) into out.
func (s *Session) readMany(op int32, paths []string, out []NodeData) error {
	if !s.plain && !s.noMultiRead.Load() {
		err := s.multiReadAll(op, paths, out)
		if !errors.Is(err, errMultiReadUnimplemented) {
			return err
		}
		s.noMultiRead.Store(true)
		s.log.Info("zkconn: ZooKeeper has no multiRead (3.6 and later); reading nodes one at a time")
	}
	return s.getEach(op, paths, out)
}

var errMultiReadUnimplemented = errors.New("zkconn: ZooKeeper has no multiRead")

// multiReadAll reads paths into out in batches, all sent at once.
func (s *Session) multiReadAll(op int32, paths []string, out []NodeData) error {
	return eachBatch(len(paths), func(lo, hi int) error {
		err := s.multiRead(op, paths[lo:hi], out[lo:hi])
		if errors.Is(err, ErrReplyTooLarge) { // nodes of unusual size
			err = s.getEach(op, paths[lo:hi], out[lo:hi])
		}
		return err
	})
}

// eachBatch calls f for each batch [lo, hi) of multiReadOps of n items,
// all at once (a single batch in the caller's goroutine, which would only
// wait for another's), and returns errMultiReadUnimplemented if a batch
// did, else the first error.
func eachBatch(n int, f func(lo, hi int) error) error {
	if n <= multiReadOps {
		if n == 0 {
			return nil
		}
		return f(0, n)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for lo := 0; lo < n; lo += multiReadOps {
		wg.Go(func() {
			if err := f(lo, min(lo+multiReadOps, n)); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if errors.Is(err, errMultiReadUnimplemented) {
			return err
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// multiRead sends one multiRead of paths and decodes its reply into out.
// A connection that was replaced between the wait for it and the write
// is tried once more.
func (s *Session) multiRead(op int32, paths []string, out []NodeData) error {
	fulls := make([]string, len(paths))
	for i, p := range paths {
		fulls[i] = s.full(p)
	}
	_, err := s.multiReadZxid(op, fulls, out)
	return err
}

// multiReadZxid is multiRead of full paths; it also returns the zxid of
// the reply (the last transaction the server had applied when it read).
func (s *Session) multiReadZxid(op int32, fulls []string, out []NodeData) (int64, error) {
	for try := 0; ; try++ {
		xid := nextSideXid()
		frame, err := s.sideRequest(xid, encodeMultiRead(xid, op, fulls), "multiRead")
		if errors.Is(err, errSideClosed) && try == 0 {
			continue
		}
		if err != nil {
			return 0, err
		}
		code, err := decodeMultiRead(frame, out)
		if code == errCodeUnimpl {
			return 0, errMultiReadUnimplemented
		}
		if code != 0 {
			return 0, fmt.Errorf("zkconn: multiRead: %w", codeError(code))
		}
		if err != nil {
			return 0, fmt.Errorf("zkconn: multiRead: %w", err)
		}
		s.multiReadOK.Store(true)
		return int64(binary.BigEndian.Uint64(frame[4:12])), nil
	}
}

// getEach reads each of paths with Get (op opGetData) or Children,
// singleReaders at a time.
func (s *Session) getEach(op int32, paths []string, out []NodeData) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan int)
	)
	for range min(singleReaders, len(paths)) {
		wg.Go(func() {
			for i := range next {
				var (
					d    []byte
					kids []string
					st   *zk.Stat
					err  error
				)
				if op == opGetChildren {
					kids, st, err = s.Children(paths[i])
				} else {
					d, st, err = s.Get(paths[i])
				}
				switch {
				case err == nil && op == opGetChildren:
					out[i] = NodeData{Children: kids, Stat: *st}
				case err == nil:
					out[i] = NodeData{Data: d, Stat: *st}
				case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNoAuth), errors.Is(err, ErrReplyTooLarge):
					out[i] = NodeData{Err: err}
				default:
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// encodeMultiRead returns the whole request frame: its length, xid and
// opcode, then per full path (chroot applied) a multi header (op: getData
// or getChildren, not done, no error) and its request (the path, no
// watch: both requests have that form), then the done header.
func encodeMultiRead(xid, op int32, fulls []string) []byte {
	size := 4 + 4 + 4 + 9
	for _, full := range fulls {
		size += 9 + 4 + len(full) + 1
	}
	b := newFrame(size, xid, opMultiRead)
	for _, full := range fulls {
		b = appendMultiHeader(b, op, false, -1)
		b = binary.BigEndian.AppendUint32(b, uint32(len(full)))
		b = append(b, full...)
		b = append(b, 0) // no watch
	}
	return appendMultiHeader(b, -1, true, -1)
}

// newFrame returns a request frame of size bytes (its length field
// included) with its length, xid and opcode written.
func newFrame(size int, xid, op int32) []byte {
	b := make([]byte, 0, size)
	b = binary.BigEndian.AppendUint32(b, uint32(size-4))
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	return binary.BigEndian.AppendUint32(b, uint32(op))
}

func appendMultiHeader(b []byte, typ int32, done bool, code int32) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(typ))
	if done {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

// statLen is the length of an encoded stat: three zxids, two times, three
// versions, the ephemeral owner, the data length, the child count and
// the child zxid.
const statLen = 68

// decodeMultiRead decodes a multiRead reply frame (xid, zxid, error,
// then per op a multi header and a getData or getChildren reply or an
// error) into out,
// which has one entry per op sent. It returns the reply's error code; a
// malformed reply is an error.
func decodeMultiRead(frame []byte, out []NodeData) (int32, error) {
	if len(frame) < 16 {
		return 0, fmt.Errorf("a reply of %d bytes", len(frame))
	}
	if code := int32(binary.BigEndian.Uint32(frame[12:16])); code != 0 {
		return code, nil
	}
	b := frame[16:]
	short := fmt.Errorf("the reply ends early (%d bytes)", len(frame))
	for i := 0; ; i++ {
		if len(b) < 9 {
			return 0, short
		}
		typ := int32(binary.BigEndian.Uint32(b))
		done := b[4] != 0
		b = b[9:]
		if done {
			if i != len(out) {
				return 0, fmt.Errorf("%d results for %d reads", i, len(out))
			}
			return 0, nil
		}
		if i >= len(out) {
			return 0, fmt.Errorf("more results than the %d reads", len(out))
		}
		switch typ {
		case opGetData:
			if len(b) < 4 {
				return 0, short
			}
			n := int(int32(binary.BigEndian.Uint32(b)))
			b = b[4:]
			var data []byte
			if n > 0 {
				if len(b) < n {
					return 0, short
				}
				data = append([]byte(nil), b[:n]...)
				b = b[n:]
			}
			if len(b) < statLen {
				return 0, short
			}
			out[i] = NodeData{Data: data, Stat: decodeStat(b[:statLen])}
			b = b[statLen:]
		case opGetChildren:
			if len(b) < 4 {
				return 0, short
			}
			n := int(int32(binary.BigEndian.Uint32(b)))
			b = b[4:]
			if n < 0 || n > len(b)/4 {
				return 0, fmt.Errorf("a list of %d children in %d bytes", n, len(b))
			}
			kids := make([]string, 0, n)
			for range n {
				if len(b) < 4 {
					return 0, short
				}
				l := int(int32(binary.BigEndian.Uint32(b)))
				b = b[4:]
				if l < 0 || len(b) < l {
					return 0, short
				}
				kids = append(kids, string(b[:l]))
				b = b[l:]
			}
			out[i] = NodeData{Children: kids}
		case -1:
			if len(b) < 4 {
				return 0, short
			}
			out[i] = NodeData{Err: codeError(int32(binary.BigEndian.Uint32(b)))}
			b = b[4:]
		default:
			return 0, fmt.Errorf("a result of type %d", typ)
		}
	}
}

func decodeStat(b []byte) zk.Stat {
	u64 := func(o int) int64 { return int64(binary.BigEndian.Uint64(b[o:])) }
	u32 := func(o int) int32 { return int32(binary.BigEndian.Uint32(b[o:])) }
	return zk.Stat{
		Czxid: u64(0), Mzxid: u64(8), Ctime: u64(16), Mtime: u64(24),
		Version: u32(32), Cversion: u32(36), Aversion: u32(40),
		EphemeralOwner: u64(44), DataLength: u32(52), NumChildren: u32(56), Pzxid: u64(60),
	}
}

// codeError is go-zookeeper's error for a ZooKeeper error code.
func codeError(code int32) error {
	switch code {
	case errCodeNoNode:
		return zk.ErrNoNode
	case errCodeNoAuth:
		return zk.ErrNoAuth
	case errCodeBadArgs:
		return zk.ErrBadArguments
	case errCodeConnLoss:
		return zk.ErrConnectionClosed
	case errCodeSessExpire:
		return zk.ErrSessionExpired
	}
	return fmt.Errorf("zkconn: ZooKeeper error code %d", code)
}

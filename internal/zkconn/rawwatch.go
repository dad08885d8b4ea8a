package zkconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// setWatchesMax bounds the path bytes of one setWatches request, as
// go-zookeeper's and the Java client's own (128 KiB).
const setWatchesMax = 128 << 10

// rawWatches are the data watches a Session set with setWatches requests
// of its own (GetManyW). go-zookeeper does not know of them, so it would
// not set them again on a new connection: the session does that itself,
// as the first request on each new connection of a live session (see
// sideConn.nextFrame), with the highest zxid its own replies carried as
// the relative zxid. ZooKeeper sends the events of a connection in order
// with its replies, so an event it sent before that reply was read, and
// one it may have lost with the connection fires again.
//
// A watch leaves the set when it fires or its holder drops it (Unwatch).
// Safe for concurrent use.
type rawWatches struct {
	mu    sync.Mutex
	paths map[string]int // full path: holders
	zxid  int64          // the highest zxid of a side reply read
}

func (w *rawWatches) add(fulls []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.paths == nil {
		w.paths = map[string]int{}
	}
	for _, f := range fulls {
		w.paths[f]++
	}
}

func (w *rawWatches) remove(full string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := w.paths[full]; n > 1 {
		w.paths[full] = n - 1
		return
	}
	delete(w.paths, full)
}

// fire notes a data watch's event: the server dropped the watch.
func (w *rawWatches) fire(ev zk.Event) {
	if ev.Type != zk.EventNodeDeleted && ev.Type != zk.EventNodeDataChanged {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.paths, ev.Path)
}

// sawZxid notes the zxid of a side reply.
func (w *rawWatches) sawZxid(z int64) {
	w.mu.Lock()
	w.zxid = max(w.zxid, z)
	w.mu.Unlock()
}

// frames returns the setWatches requests that set every watch again,
// with the highest zxid seen as their relative zxid; nil when none.
func (w *rawWatches) frames() [][]byte {
	w.mu.Lock()
	if len(w.paths) == 0 {
		w.mu.Unlock()
		return nil
	}
	fulls := make([]string, 0, len(w.paths))
	for f := range w.paths {
		fulls = append(fulls, f)
	}
	rel := w.zxid
	w.mu.Unlock()
	var out [][]byte
	for _, part := range splitWatches(fulls) {
		out = append(out, encodeSetWatches(nextSideXid(), rel, part))
	}
	return out
}

// splitWatches cuts fulls into parts of at most setWatchesMax path bytes.
func splitWatches(fulls []string) [][]string {
	var parts [][]string
	lo, size := 0, 0
	for i, f := range fulls {
		if i > lo && size+4+len(f) > setWatchesMax {
			parts = append(parts, fulls[lo:i])
			lo, size = i, 0
		}
		size += 4 + len(f)
	}
	if lo < len(fulls) {
		parts = append(parts, fulls[lo:])
	}
	return parts
}

// encodeSetWatches encodes a setWatches request: the relative zxid, the
// data watches' paths, and empty lists of exist and child watches.
func encodeSetWatches(xid int32, rel int64, fulls []string) []byte {
	size := 4 + 4 + 4 + 8 + 4 + 4 + 4
	for _, f := range fulls {
		size += 4 + len(f)
	}
	b := newFrame(size, xid, opSetWatches)
	b = binary.BigEndian.AppendUint64(b, uint64(rel))
	b = binary.BigEndian.AppendUint32(b, uint32(len(fulls)))
	for _, f := range fulls {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	b = binary.BigEndian.AppendUint32(b, 0)    // exist watches
	return binary.BigEndian.AppendUint32(b, 0) // child watches
}

// ErrNoRawWatches: GetManyW cannot be used on this session (plain mode,
// or a server without multiRead); read each node with GetWFull instead.
var ErrNoRawWatches = errors.New("zkconn: no batched watched reads on this session")

// GetManyW reads the nodes at paths (each without the chroot) like
// GetMany, in multiRead batches, and sets a data watch on each node that
// exists with one setWatches request per batch, relative to the zxid the
// read saw: a node changed or deleted after the read fires at once. The
// watches' events go to the session's node hooks (OnNodeEvent) only:
// there is no channel, so set the hook before the read. Each watch is set
// again on every new connection of the session until it fires or Unwatch
// drops it. A node read without
// error must be passed to Unwatch once its holder no longer needs the
// watch; no watch is kept of a node not read (its NodeData.Err), nor of
// any when GetManyW returns an error (a watch the server set may still
// fire). It returns ErrNoRawWatches when the session cannot (the caller
// reads each node instead), or the error of a request.
func (s *Session) GetManyW(paths []string) ([]NodeData, error) {
	if s.plain || s.noMultiRead.Load() {
		return nil, ErrNoRawWatches
	}
	fulls := make([]string, len(paths))
	for i, p := range paths {
		fulls[i] = s.fullKept(p)
	}
	s.raw.add(fulls)
	out, err := s.getManyW(fulls)
	for i, f := range fulls {
		if err != nil || out[i].Err != nil {
			s.raw.remove(f) // no watch was set
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// getManyW reads and watches fulls in batches of multiReadOps, all sent
// at once; each batch's setWatches follows its read.
func (s *Session) getManyW(fulls []string) ([]NodeData, error) {
	out := make([]NodeData, len(fulls))
	err := eachBatch(len(fulls), func(lo, hi int) error { return s.readWatched(fulls[lo:hi], out[lo:hi]) })
	if errors.Is(err, errMultiReadUnimplemented) {
		s.noMultiRead.Store(true)
		return nil, ErrNoRawWatches
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readWatched reads fulls (one multiRead) into out and watches those
// there, relative to the read's zxid.
func (s *Session) readWatched(fulls []string, out []NodeData) error {
	zxid, err := s.multiReadZxid(opGetData, fulls, out)
	if err != nil {
		return err
	}
	var there []string
	for i := range fulls {
		if out[i].Err == nil {
			there = append(there, fulls[i])
		}
	}
	for _, part := range splitWatches(there) {
		if err := s.setWatches(zxid, part); err != nil {
			return err
		}
	}
	return nil
}

// Unwatch drops the watch GetManyW set on the node at p: it is no longer
// set again on a new connection (the server keeps it until it fires).
func (s *Session) Unwatch(p string) { s.raw.remove(s.fullKept(p)) }

// setWatches sends one setWatches request for fulls relative to zxid and
// waits for its reply; the events it fires come before it.
func (s *Session) setWatches(zxid int64, fulls []string) error {
	xid := nextSideXid()
	r, err := s.sideRequest(xid, encodeSetWatches(xid, zxid, fulls), "setWatches")
	if err != nil {
		return err
	}
	if code := int32(binary.BigEndian.Uint32(r[12:16])); code != 0 {
		return fmt.Errorf("zkconn: setWatches: %w", codeError(code))
	}
	return nil
}

// sideRequest sends a side request and waits for its reply frame (at
// least a reply header), up to the session's request timeout.
func (s *Session) sideRequest(xid int32, frame []byte, name string) ([]byte, error) {
	sent, err := s.await()
	if err != nil {
		return nil, err
	}
	if s.lines.closing.Load() {
		return nil, ErrClosed
	}
	sc := s.lines.side.Load()
	if sc == nil {
		return nil, fmt.Errorf("zkconn: %s: %w", name, errSideClosed)
	}
	timeout := s.timeout()
	ch, err := sc.send(xid, frame, time.Now().Add(timeout))
	if err != nil {
		return nil, fmt.Errorf("zkconn: %s: %w", name, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	var r sideReply
	select {
	case r = <-ch:
	case <-t.C:
		sc.forget(xid)
		r.err = fmt.Errorf("%w: no %s reply in %v", ErrTimeout, name, timeout)
	case <-s.t.Dying():
		sc.forget(xid)
		r.err = ErrClosed
	}
	if r.err != nil {
		return nil, fmt.Errorf("zkconn: %s: %w", name, r.err)
	}
	if len(r.frame) < 16 {
		return nil, fmt.Errorf("zkconn: %s: a reply of %d bytes", name, len(r.frame))
	}
	s.answeredAt(sent)
	return r.frame, nil
}

// OwnWatches returns how many of GetManyW's watches the session would set
// again on a new connection.
func (s *Session) OwnWatches() int {
	s.raw.mu.Lock()
	defer s.raw.mu.Unlock()
	return len(s.raw.paths)
}

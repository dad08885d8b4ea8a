package zkconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
)

// opCreate2 is ZooKeeper's opcode of a create whose reply carries the
// new node's stat (3.5 and later).
const opCreate2 = 15

// ErrRolledBack is the error of a CreateManyW create that was valid on
// its own but went with its transaction, which another create of it
// failed: it was not made.
var ErrRolledBack = errors.New("zkconn: not created: another create of its transaction failed")

// CreateOp is one node for CreateManyW: its path without the chroot, its
// data and its flags (zk.FlagEphemeral, ...); the session's ACL.
type CreateOp struct {
	Path  string
	Data  []byte
	Flags int32
}

// CreateManyW creates the nodes of ops and sets a data watch on each it
// made, as a create followed by GetManyW would, in two round trips: one
// multi transaction of create2 operations (the replies carry each node's
// stat), then one setWatches request relative to that transaction's zxid,
// so that a node changed or deleted since fires at once. ops are split
// into transactions whose replies fit the session's reply cap, sent at
// once; each transaction is all or none. The watches' events go to the
// session's node hooks (OnNodeEvent) only: set the hook before the call.
//
// It returns one NodeData per op, in order: the data written and the
// node's stat, or Err: the server's refusal (zk.ErrNodeExists,
// zk.ErrNoNode for a missing parent, ...) of the create that failed its
// transaction, and ErrRolledBack for the others of that transaction. A
// node made and watched must be passed to Unwatch once its holder no
// longer needs the watch. err is for a request (the connection failed,
// the session closed, no reply in time): the nodes of a transaction
// that went out may have been made, unwatched; read them to know. It
// returns ErrNoRawWatches, before sending anything, when the session
// cannot: plain mode, or no multiRead answered yet on it (a server of 3.6
// or later, which has create2 in multi, answers it; an older one may drop
// the connection on an op it does not know). Create each node instead.
func (s *Session) CreateManyW(ops []CreateOp) ([]NodeData, error) {
	if s.plain || !s.multiReadOK.Load() {
		return nil, ErrNoRawWatches
	}
	out := make([]NodeData, len(ops))
	if len(ops) == 0 {
		return out, nil
	}
	fulls := make([]string, len(ops))
	for i, op := range ops {
		fulls[i] = s.fullKept(op.Path)
	}
	parts := splitCreates(fulls, s.replies.limit)
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for k, p := range parts {
		wg.Go(func() { errs[k] = s.createWatched(ops[p.lo:p.hi], fulls[p.lo:p.hi], out[p.lo:p.hi]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		// The caller reads every node back, which watches them again:
		// the watches of the transactions that went through are not
		// kept twice.
		for _, p := range watchedParts(parts, errs, out) {
			for _, f := range fulls[p.lo:p.hi] {
				s.raw.remove(f)
			}
		}
		return nil, err
	}
	return out, nil
}

// watchedParts returns the parts of a CreateManyW whose transaction made
// its nodes and whose watches were set (no error, no create refused).
func watchedParts(parts []span, errs []error, out []NodeData) []span {
	var w []span
	for k, p := range parts {
		if errs[k] == nil && out[p.lo].Err == nil {
			w = append(w, p)
		}
	}
	return w
}

// span is a part [lo, hi) of a list.
type span struct{ lo, hi int }

// splitCreates splits fulls into parts whose create2 replies (a multi
// header, the path and a stat per node) fit in limit bytes, with room for
// the reply's own header.
func splitCreates(fulls []string, limit int) []span {
	var parts []span
	lo, size := 0, 16+9
	for i, f := range fulls {
		n := 9 + 4 + len(f) + statLen
		if i > lo && size+n > limit {
			parts = append(parts, span{lo, i})
			lo, size = i, 16+9
		}
		size += n
	}
	return append(parts, span{lo, len(fulls)})
}

// createWatched sends one multi of creates and, if it made the nodes,
// one setWatches on them (setWatchesMax bounds its paths too).
func (s *Session) createWatched(ops []CreateOp, fulls []string, out []NodeData) error {
	xid := nextSideXid()
	frame, err := s.sideRequest(xid, encodeCreates(xid, ops, fulls, s.acl), "multi")
	if err != nil {
		return err
	}
	failed, err := decodeCreates(frame, out)
	if err != nil {
		return fmt.Errorf("zkconn: multi: %w", err)
	}
	if failed {
		return nil // nothing made: each op's Err says why
	}
	for i := range out {
		out[i].Data = ops[i].Data
	}
	// Every node of the transaction has its zxid: a watch relative to it
	// fires for whatever came after.
	zxid := out[0].Stat.Czxid
	s.raw.add(fulls)
	for _, part := range splitWatches(fulls) {
		if err := s.setWatches(zxid, part); err != nil {
			for _, f := range fulls {
				s.raw.remove(f)
			}
			return err
		}
	}
	return nil
}

// encodeCreates returns the whole request frame of a multi of create2
// operations (full paths, the session's acl), then the done header.
func encodeCreates(xid int32, ops []CreateOp, fulls []string, acl []zk.ACL) []byte {
	aclLen := 4
	for _, a := range acl {
		aclLen += 4 + 4 + len(a.Scheme) + 4 + len(a.ID)
	}
	size := 4 + 4 + 4 + 9
	for i, f := range fulls {
		size += 9 + 4 + len(f) + 4 + len(ops[i].Data) + aclLen + 4
	}
	b := newFrame(size, xid, opMulti)
	for i, f := range fulls {
		b = appendMultiHeader(b, opCreate2, false, -1)
		b = appendString(b, f)
		if ops[i].Data == nil {
			b = binary.BigEndian.AppendUint32(b, 0xffffffff) // null: as go-zookeeper sends it
		} else {
			b = binary.BigEndian.AppendUint32(b, uint32(len(ops[i].Data)))
			b = append(b, ops[i].Data...)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(acl)))
		for _, a := range acl {
			b = binary.BigEndian.AppendUint32(b, uint32(a.Perms))
			b = appendString(b, a.Scheme)
			b = appendString(b, a.ID)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(ops[i].Flags))
	}
	return appendMultiHeader(b, -1, true, -1)
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// decodeCreates decodes the reply frame of a multi of create2 operations
// (xid, zxid, error, then per op a multi header and a create2 reply, the
// path and the stat, or an error) into out, which has one entry per op
// sent: the stat, or Err. failed: the transaction made nothing (each Err
// says why: the refused create's error, ErrRolledBack for the others).
// A reply without results, or a malformed one, is an error.
func decodeCreates(frame []byte, out []NodeData) (failed bool, err error) {
	if len(frame) < 16 {
		return false, fmt.Errorf("a reply of %d bytes", len(frame))
	}
	code := int32(binary.BigEndian.Uint32(frame[12:16]))
	b := frame[16:]
	if code != 0 && len(b) == 0 {
		return false, codeError(code)
	}
	short := fmt.Errorf("the reply ends early (%d bytes)", len(frame))
	for i := 0; ; i++ {
		if len(b) < 9 {
			return false, short
		}
		typ := int32(binary.BigEndian.Uint32(b))
		done := b[4] != 0
		b = b[9:]
		if done {
			if i != len(out) {
				return false, fmt.Errorf("%d results for %d creates", i, len(out))
			}
			if code != 0 && !failed {
				return false, codeError(code)
			}
			return failed, nil
		}
		if i >= len(out) {
			return false, fmt.Errorf("more results than the %d creates", len(out))
		}
		switch typ {
		case opCreate2:
			if len(b) < 4 {
				return false, short
			}
			n := int(int32(binary.BigEndian.Uint32(b)))
			b = b[4:]
			if n < 0 || len(b) < n+statLen {
				return false, short
			}
			b = b[n:] // the path, as sent
			out[i] = NodeData{Stat: decodeStat(b[:statLen])}
			b = b[statLen:]
		case -1:
			if len(b) < 4 {
				return false, short
			}
			failed = true
			out[i] = NodeData{Err: createError(int32(binary.BigEndian.Uint32(b)))}
			b = b[4:]
		default:
			return false, fmt.Errorf("a result of type %d", typ)
		}
	}
}

// createError is the error of a create of a failed multi: ErrRolledBack
// for one that was not refused itself (0, or -2: "runtime inconsistency",
// the ops after the refused one), go-zookeeper's error for a refusal.
func createError(code int32) error {
	switch code {
	case 0, -2:
		return ErrRolledBack
	case -110:
		return zk.ErrNodeExists
	case -108:
		return zk.ErrNoChildrenForEphemerals
	case -114:
		return zk.ErrInvalidACL
	}
	return codeError(code)
}

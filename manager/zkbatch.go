package manager

import (
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// batchMax is the most owner-node writes one multi request carries (each
// op 100-150 bytes: well under ZooKeeper's 1 MB jute.maxbuffer).
const batchMax = 500

// opBatcher puts the owner-node writes of one kind (creates, or deletes)
// made at about the same time into multi requests: one ZooKeeper
// transaction per batchMax nodes, where each write was a transaction of
// its own. A session's requests are served in order, and a read queued
// behind a write waits for its commit, so a member that claimed or
// released thousands of partitions one request each (a plan's new
// partitions, a holder's nodes gone at its session's end, a rebalance's
// drains ending together) kept its own reads waiting seconds behind its
// writes; at 10,000 partitions and 50 members the deletes were half the
// group's writes while members left.
//
// The writes queued while a batch is under way go in the next one: the
// first caller sends a batch, then hands the sending over to the first
// of those queued meanwhile, once the batch was answered or has been out
// for handOverAfter (batchQueue). A multi that fails writes
// nothing (a node there or gone, another version, a lost connection):
// its writes are then sent each on its own, with its own outcome, as
// without a batch. The zero value is ready; safe for concurrent use.
type opBatcher struct {
	batchQueue[*opReq]
}

// opReq is one queued write: op in a multi, alone on its own.
type opReq struct {
	op    any
	alone func(*zkconn.Session) error
	err   error // set before done is closed
	// watch: a create that wants its node watched (createW); made: it
	// was, in a batch of such creates (zkconn.Session.CreateManyW), and nd
	// is its node. Set before done is closed.
	watch bool
	made  bool
	nd    zkconn.NodeData
	batchTurn
}

// create creates the node at path with data (flags as Create's, the
// session's ACL) in the next batch, and returns its outcome as s.Create
// would.
func (b *opBatcher) create(s *zkconn.Session, path string, data []byte, flags int32) error {
	return b.do(s, createReq(path, data, flags))
}

// createW creates the node at path like create and, when it was made in
// a batch of such creates that the session could watch
// (zkconn.Session.CreateManyW), returns made with the node (its data and
// stat) and a data watch on it, whose events go to the session's node
// hooks only: set the hook for path first, and Unwatch the node once it
// is not needed. Otherwise it returns create's outcome, and no watch.
func (b *opBatcher) createW(s *zkconn.Session, path string, data []byte, flags int32) (nd zkconn.NodeData, made bool, err error) {
	r := createReq(path, data, flags)
	r.watch = true
	err = b.do(s, r)
	return r.nd, r.made, err
}

// createReq is the queued create of the node at path.
func createReq(path string, data []byte, flags int32) *opReq {
	return &opReq{op: &zk.CreateRequest{Path: path, Data: data, Flags: flags}, alone: func(s *zkconn.Session) error {
		_, err := s.Create(path, data, flags, nil)
		return err
	}}
}

// delete deletes the node at path (of the version) in the next batch, and
// returns its outcome as s.Delete would.
func (b *opBatcher) delete(s *zkconn.Session, path string, version int32) error {
	return b.do(s, &opReq{op: &zk.DeleteRequest{Path: path, Version: version}, alone: func(s *zkconn.Session) error {
		return s.Delete(path, version)
	}})
}

func (b *opBatcher) do(s *zkconn.Session, r *opReq) error {
	r.batchTurn = newTurn()
	b.run(r, func() { b.send(s) })
	return r.err
}

// send sends what is queued and hands the sending over (see batchQueue).
func (b *opBatcher) send(s *zkconn.Session) {
	batch, answered := b.lead()
	var wg sync.WaitGroup
	for part := range slices.Chunk(batch, batchMax) {
		wg.Go(func() { sendChunk(s, part) })
	}
	wg.Wait()
	answered()
}

// sendChunk writes part in one multi (creates that want a watch: see
// createWatched), or each on its own if it fails, and closes their done.
func sendChunk(s *zkconn.Session, part []*opReq) {
	defer func() {
		for _, r := range part {
			close(r.done)
		}
	}()
	rest, multi := createWatched(s, part)
	if multi && len(rest) > 1 {
		ops := make([]any, len(rest))
		for i, r := range rest {
			ops[i] = r.op
		}
		if _, err := s.Multi(ops...); err == nil {
			return
		}
	}
	// Each on its own, all at once: the session pipelines them (one after
	// another, 500 creates at a loaded server took seconds, and kept every
	// claim queued behind them waiting).
	var wg sync.WaitGroup
	for _, r := range rest {
		wg.Go(func() { r.err = r.alone(s) })
	}
	wg.Wait()
}

// createWatched sends part, when every op of it is a create that wants a
// watch, in CreateManyW, and returns what is left to write: all of part,
// in a multi as before (multi), when the session cannot or the request
// failed (the nodes may have been made: the creates then say so), the
// creates of a transaction that failed, each on its own (which tells its
// outcome), or nothing.
func createWatched(s *zkconn.Session, part []*opReq) (rest []*opReq, multi bool) {
	ops := make([]zkconn.CreateOp, len(part))
	for i, r := range part {
		c, ok := r.op.(*zk.CreateRequest)
		if !r.watch || !ok {
			return part, true
		}
		ops[i] = zkconn.CreateOp{Path: c.Path, Data: c.Data, Flags: c.Flags}
	}
	out, err := s.CreateManyW(ops)
	if err != nil {
		return part, true
	}
	for i, r := range part {
		if out[i].Err != nil {
			rest = append(rest, r)
			continue
		}
		r.nd, r.made = out[i], true
	}
	return rest, false
}

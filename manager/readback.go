package manager

import (
	"errors"
	"sync/atomic"

	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// readBatcher puts the claims' reads of their owner nodes (with a watch:
// of another owner's node, to wait for it to go; of their own after a
// create that came without its stat, for the fencing token and to see
// the claim's loss) made at
// about the same time into batched watched reads (zkconn's GetManyW): a
// multiRead and a setWatches request per 256 nodes, where each read was a
// request of its own. A member that claimed thousands of partitions at
// once (a holder's nodes gone at its session's end) spent two requests
// per partition on these reads, more than on everything else of the
// handover.
//
// The reads queued while a batch is under way go in the next one, sent by
// the first of them (batchQueue). When the session cannot
// (zkconn.ErrNoRawWatches), every read gets that error, and its caller
// reads the node on its own. The zero value is ready; safe for
// concurrent use.
//
// With plain set it reads without watches (zkconn's GetMany, which has
// its own fallback), for the releases' reads of their nodes before the
// delete.
type readBatcher struct {
	batchQueue[*readReq]
	plain bool
	off   atomic.Bool // the session has no batched watched reads
}

// readReq is one queued read.
type readReq struct {
	path string
	nd   zkconn.NodeData
	err  error // set before done is closed
	batchTurn
}

// read reads the node at path and watches it (see zkconn.GetManyW) in the
// next batch: set the node's hook first. No watch is kept on an error,
// the request's or the node's (NodeData.Err); otherwise the caller must
// Unwatch path once it no longer needs the watch.
func (b *readBatcher) read(s *zkconn.Session, path string) (zkconn.NodeData, error) {
	if b.off.Load() {
		return zkconn.NodeData{}, zkconn.ErrNoRawWatches
	}
	r := &readReq{path: path, batchTurn: newTurn()}
	b.run(r, func() { b.send(s) })
	return r.nd, r.err
}

// send reads everything queued in one GetManyW and hands the sending over
// to the first read queued meanwhile (see batchQueue).
func (b *readBatcher) send(s *zkconn.Session) {
	batch, answered := b.lead()
	paths := make([]string, len(batch))
	for i, r := range batch {
		paths[i] = r.path
	}
	read := s.GetManyW
	if b.plain {
		read = s.GetMany
	}
	out, err := read(paths)
	if errors.Is(err, zkconn.ErrNoRawWatches) {
		b.off.Store(true)
	}
	for i, r := range batch {
		if err != nil {
			r.err = err
		} else {
			r.nd = out[i]
		}
		close(r.done)
	}
	answered()
}

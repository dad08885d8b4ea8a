package manager

import (
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// deleteBatchMax is the most owner nodes one multi request deletes (each
// op about 100 bytes: well under ZooKeeper's 1 MB jute.maxbuffer).
const deleteBatchMax = 500

// deleteBatcher puts the deletes of the owner nodes released at about the
// same time (a rebalance that revokes hundreds of partitions, whose drains
// end together) into multi requests: one ZooKeeper transaction per
// deleteBatchMax nodes, where each delete was a transaction of its own.
// At 10,000 partitions and 50 members those deletes were half the
// group's writes while members left, and each member's session served
// its rebalance's reads only after its own queue of writes. The deletes
// queued while a batch is under way go in the next one: the first caller
// sends a batch, then hands the sending over to the first of those queued
// meanwhile, so that no caller waits for more than the batch its delete
// is in and the one before. A multi that fails deletes nothing (a node
// gone, another version, a lost connection): its deletes are then sent
// one by one, each with its own outcome, as without a batch. The zero
// value is ready; safe for concurrent use.
type deleteBatcher struct {
	mu    sync.Mutex
	queue []*deleteReq
	busy  bool // a caller is sending a batch
}

// deleteReq is one queued delete.
type deleteReq struct {
	path    string
	version int32
	err     error         // set before done is closed
	done    chan struct{} // closed once sent and answered
	lead    chan struct{} // closed when this caller is to send the next batch
}

// delete deletes the node at path (of the version) through s in the next
// batch, and returns its outcome as s.Delete would.
func (b *deleteBatcher) delete(s *zkconn.Session, path string, version int32) error {
	r := &deleteReq{path: path, version: version, done: make(chan struct{}), lead: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, r)
	leader := !b.busy
	b.busy = true
	b.mu.Unlock()
	if !leader {
		select {
		case <-r.done:
			return r.err
		case <-r.lead:
		}
	}
	b.send(s)
	<-r.done // r was queued: the batch sent included it
	return r.err
}

// send sends what is queued and hands the sending over.
func (b *deleteBatcher) send(s *zkconn.Session) {
	b.mu.Lock()
	batch := b.queue
	b.queue = nil
	b.mu.Unlock()
	var wg sync.WaitGroup
	for part := range slices.Chunk(batch, deleteBatchMax) {
		wg.Go(func() { deleteChunk(s, part) })
	}
	wg.Wait()
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.busy = false
	} else {
		close(b.queue[0].lead)
	}
	b.mu.Unlock()
}

// deleteChunk deletes part's nodes in one multi, or one by one if it
// fails, and closes their done.
func deleteChunk(s *zkconn.Session, part []*deleteReq) {
	defer func() {
		for _, r := range part {
			close(r.done)
		}
	}()
	if len(part) > 1 {
		ops := make([]any, len(part))
		for i, r := range part {
			ops[i] = &zk.DeleteRequest{Path: r.path, Version: r.version}
		}
		if _, err := s.Multi(ops...); err == nil {
			return
		}
	}
	for _, r := range part {
		r.err = s.Delete(r.path, r.version)
	}
}

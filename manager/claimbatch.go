package manager

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// createBatchMax is the most owner nodes one multi request creates (each
// op about 150 bytes: well under ZooKeeper's 1 MB jute.maxbuffer).
const createBatchMax = 500

// createBatch creates the owner nodes of the partitions one plan gave
// this member and saw unowned, in multi requests (createBatchMax nodes
// each), before their slots read them back. ZooKeeper serves a session's
// requests one after another, so a member given many partitions at once
// (its start) otherwise queues a create per partition ahead of every read
// back: 1,000 creates kept the first partition from starting for 40-87 ms
// where one multi takes a few. The first slot to claim sends the multis,
// all at once; each slot waits for its own (a slot revoked meanwhile
// waits too: a node created for it must be read back and let go, see
// acquire). A multi that fails creates nothing (a node held by someone
// else, a lost connection): its slots create their nodes one by one, as
// without a batch.
type createBatch struct {
	leader atomic.Bool
	chunks []*createChunk
	of     map[TopicPartition]*createChunk
}

// createChunk is one multi request of a batch.
type createChunk struct {
	tps  []TopicPartition
	done chan struct{}
	ok   bool // written before done closes
}

func newCreateBatch(tps []TopicPartition) *createBatch {
	b := &createBatch{of: make(map[TopicPartition]*createChunk, len(tps))}
	for part := range slices.Chunk(tps, createBatchMax) {
		ch := &createChunk{tps: part, done: make(chan struct{})}
		b.chunks = append(b.chunks, ch)
		for _, tp := range part {
			b.of[tp] = ch
		}
	}
	return b
}

// await returns whether the batch created tp's owner node, sending the
// batch's requests first if no slot has yet.
func (b *createBatch) await(s *zkconn.Session, group, owner string, tp TopicPartition, log *slog.Logger) bool {
	if b.leader.CompareAndSwap(false, true) {
		b.send(s, group, owner, log)
	}
	ch := b.of[tp]
	if ch == nil {
		return false
	}
	<-ch.done
	return ch.ok
}

// send sends the batch's multis at once (ZooKeeper answers them in order)
// and returns once all are answered.
func (b *createBatch) send(s *zkconn.Session, group, owner string, log *slog.Logger) {
	data := zkdata.FormatOwner(owner)
	var wg sync.WaitGroup
	for _, ch := range b.chunks {
		wg.Go(func() {
			defer close(ch.done)
			ops := make([]any, len(ch.tps))
			for i, tp := range ch.tps {
				ops[i] = &zk.CreateRequest{Path: zkdata.OwnerPath(group, tp.Topic, tp.Partition), Data: data, Flags: zk.FlagEphemeral}
			}
			if _, err := s.Multi(ops...); err != nil {
				log.Debug("owner nodes not created in one request; each is created on its own", "partitions", len(ch.tps), "error", err)
				return
			}
			ch.ok = true
		})
	}
	wg.Wait()
}

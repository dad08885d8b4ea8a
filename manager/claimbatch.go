package manager

import (
	"log/slog"
	"slices"
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
// (its start) otherwise queues a create per partition ahead of every
// read back: 1,000 creates kept the first partition from starting for
// 40-90 ms where one multi takes a few. The first slot to claim sends the
// multis; the others wait for it (a slot revoked meanwhile waits too: a
// node created for it must be read back and let go, see acquire). A multi
// that fails creates nothing (a node held by someone else, a lost
// connection): its slots create their nodes one by one, as without a
// batch.
type createBatch struct {
	tps     []TopicPartition
	leader  atomic.Bool
	done    chan struct{}
	created map[TopicPartition]bool // written before done closes
}

func newCreateBatch(tps []TopicPartition) *createBatch {
	return &createBatch{tps: tps, done: make(chan struct{}), created: make(map[TopicPartition]bool, len(tps))}
}

// await returns whether the batch created tp's owner node, sending the
// batch first if no slot has yet.
func (b *createBatch) await(s *zkconn.Session, group, owner string, tp TopicPartition, log *slog.Logger) bool {
	if b.leader.CompareAndSwap(false, true) {
		b.send(s, group, owner, log)
		close(b.done)
	}
	<-b.done
	return b.created[tp]
}

func (b *createBatch) send(s *zkconn.Session, group, owner string, log *slog.Logger) {
	data := zkdata.FormatOwner(owner)
	for chunk := range slices.Chunk(b.tps, createBatchMax) {
		ops := make([]any, len(chunk))
		for i, tp := range chunk {
			ops[i] = &zk.CreateRequest{Path: zkdata.OwnerPath(group, tp.Topic, tp.Partition), Data: data, Flags: zk.FlagEphemeral}
		}
		if _, err := s.Multi(ops...); err != nil {
			log.Debug("owner nodes not created in one request; each is created on its own", "partitions", len(chunk), "error", err)
			continue
		}
		for _, tp := range chunk {
			b.created[tp] = true
		}
	}
}

package manager

import (
	"context"
	"sync"

	"github.com/zkgroup/zkgroup/internal/offsetslink"
	"github.com/zkgroup/zkgroup/offsets"
)

// finalCommits puts the final commits of the partitions that stop at
// Close into one round of the Kafka offset store: one OffsetCommit and one
// OffsetFetch (the read-back) for all of them. Without it, the partition
// whose drain ended first had its final commit sent in a round of its own,
// and the others waited for that round to end before theirs began: two
// rounds, four round trips, where one round does (see offsets/kafka_hold.go).
// Nothing is committed later than before except by the other partitions'
// drains: the hold ends once every stopping partition has queued its
// final commit or stopped without one, and at the latest after
// CommitInterval (shutdown), the time a routine commit may wait anyway.
// With offsets in ZooKeeper it does nothing (each commit is its own
// transaction: the store's hold is nil). Safe for concurrent use.
type finalCommits struct {
	mu      sync.Mutex
	hold    offsetslink.Holder
	waiting map[TopicPartition]bool // stopping at Close, final commit not queued yet
}

// begin holds st, the consumer's store, for the final commits of tps.
func (f *finalCommits) begin(st store, tps []TopicPartition) {
	if len(tps) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := st.hold(len(tps))
	if h == nil {
		return
	}
	f.waiting = make(map[TopicPartition]bool, len(tps))
	for _, tp := range tps {
		f.waiting[tp] = true
	}
	f.hold = h
}

// committing notes that tp's final commit is being queued (the store
// counts it toward the hold itself).
func (f *finalCommits) committing(tp TopicPartition) {
	f.mu.Lock()
	delete(f.waiting, tp)
	f.mu.Unlock()
}

// done notes that tp's partition stopped (Consumer.stopped), or its slot
// ended without one: if it queued no final commit (nothing to commit,
// lost, refused, never started), the hold expects one fewer. Idempotent.
func (f *finalCommits) done(tp TopicPartition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiting[tp] {
		delete(f.waiting, tp)
		f.hold.Fewer(1)
	}
}

// release ends the hold. Idempotent.
func (f *finalCommits) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hold != nil {
		f.hold.Release()
		f.hold, f.waiting = nil, nil
	}
}

// partitionStore is the store the partition managers use: the consumer's
// (Reset included, for seeks), with each final commit noted by
// finalCommits before it is queued.
type partitionStore struct {
	store
	f *finalCommits
}

func (s partitionStore) Commit(ctx context.Context, topic string, partition int32, next int64) error {
	s.f.committing(TopicPartition{Topic: topic, Partition: partition})
	return s.store.Commit(ctx, topic, partition, next)
}

// The partition managers find Reset on it (a seek's write).
var _ offsets.Store = partitionStore{}

package manager

import (
	"context"
	"time"

	"github.com/zkgroup/zkgroup/internal/partition"
)

// PartitionStream is the stream of one owned partition in ModePartitions.
// It opens when the partition is claimed and its channel (Messages, or
// Batches with DeliveryBatches; the other one is closed from the start) is
// closed by the consumer after the partition was revoked (drained,
// committed) or lost. Safe for concurrent use.
type PartitionStream struct {
	topic      string
	partition  int32
	generation uint64
	ch         chan *partition.Message
	bch        chan *partition.Batch
	pm         *partition.Manager
	rest       leftovers // what Each loops left early
}

// closedMessages and closedBatches stand for the channel a stream's
// delivery does not use.
var (
	closedMessages = func() chan *partition.Message { c := make(chan *partition.Message); close(c); return c }()
	closedBatches  = func() chan *partition.Batch { c := make(chan *partition.Batch); close(c); return c }()
)

// Topic returns the partition's topic.
func (s *PartitionStream) Topic() string { return s.topic }

// Partition returns the partition id.
func (s *PartitionStream) Partition() int32 { return s.partition }

// TopicPartition names the stream's partition.
func (s *PartitionStream) TopicPartition() TopicPartition {
	return TopicPartition{Topic: s.topic, Partition: s.partition}
}

// Generation identifies this ownership of the partition.
func (s *PartitionStream) Generation() uint64 { return s.generation }

// Messages delivers the partition's messages in offset order
// (DeliveryMessages); closed on revoke. Unread, it holds up only this
// partition.
func (s *PartitionStream) Messages() <-chan *partition.Message { return s.ch }

// Batches delivers the partition's messages in batches, in offset order
// (DeliveryBatches); closed on revoke. Unbuffered: a batch is handed out
// only when received. Unread, it holds up only this partition.
func (s *PartitionStream) Batches() <-chan *partition.Batch { return s.bch }

// Poll returns the next batch (DeliveryBatches), waiting until one is
// fetched; ErrClosed once the stream is closed (revoked, lost, or the
// consumer closed), or ctx's error. Nothing is handed out until asked.
func (s *PartitionStream) Poll(ctx context.Context) (*partition.Batch, error) {
	return poll(ctx, s.bch)
}

// Commit commits what is acked on this partition now (see
// Consumer.Commit). An *partition.Error wrapping partition.ErrStopped once
// the stream's ownership ended.
func (s *PartitionStream) Commit(ctx context.Context) error { return s.pm.Commit(ctx) }

// Seek moves the partition's position to offset, or sarama.OffsetOldest /
// sarama.OffsetNewest; see partition.Manager.Seek.
func (s *PartitionStream) Seek(ctx context.Context, offset int64) error {
	return s.pm.Seek(ctx, offset)
}

// SeekTime moves the partition's position to the first message at or
// after t; see partition.Manager.SeekTime.
func (s *PartitionStream) SeekTime(ctx context.Context, t time.Time) error {
	return s.pm.SeekTime(ctx, t)
}

// Pause stops fetching the partition, keeping it; see
// partition.Manager.Pause.
func (s *PartitionStream) Pause(ctx context.Context) error { return s.pm.Pause(ctx) }

// Resume fetches a paused partition again.
func (s *PartitionStream) Resume() { s.pm.Resume() }

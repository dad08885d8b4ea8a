package manager

import (
	"context"
	"iter"
	"time"

	"github.com/zkgroup/zkgroup/internal/partition"
)

// PartitionStream is the stream of one owned partition (ModePartitions),
// from Consumer.EachPartition: one ownership of the partition, from its
// claim until it was revoked (drained, committed) or lost. Range over
// Each, or call Poll, in a goroutine of its own, so that partitions are
// processed in parallel. Safe for concurrent use.
type PartitionStream struct {
	topic      string
	partition  int32
	generation uint64
	bch        chan *partition.Batch // closed by the partition manager once stopped
	pm         *partition.Manager
	rest       leftovers // what Each loops left early
}

// EachPartition returns the per-partition loop (ModePartitions): a
// stream for each partition as it is claimed, to be consumed in a
// goroutine of its own:
//
//	for ps, err := range c.EachPartition(ctx) {
//		if err != nil {
//			return err // ErrMode: the consumer is in ModeMerged
//		}
//		go func() {
//			for msg := range ps.Each(ctx) {
//				process(msg)
//				msg.Ack()
//			}
//		}()
//	}
//
// A claimed partition is not fetched until its stream was taken (up to
// 1,024 streams wait to be taken). The loop ends when ctx ends or the
// consumer stopped; in ModeMerged it yields ErrMode once and ends.
func (c *Consumer) EachPartition(ctx context.Context) iter.Seq2[*PartitionStream, error] {
	if c.cfg.Mode != ModePartitions {
		return modeErr[*PartitionStream]()
	}
	return func(yield func(*PartitionStream, error) bool) {
		for {
			select {
			case s, ok := <-c.partitions:
				if !ok || !yield(s, nil) {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}
}

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

// Poll returns the partition's next batch, waiting until one is fetched:
// nothing is handed out until asked. It returns ErrClosed once the stream
// ended (its partition was revoked or lost, or the consumer stopped), or
// ctx's error.
func (s *PartitionStream) Poll(ctx context.Context) (*Batch, error) {
	b, err := poll(ctx, s.bch)
	return batchOf(b), err
}

// Commit commits what is acked on this partition now (see
// Consumer.Commit). A *PartitionError wrapping ErrStopped once the
// stream's ownership ended.
func (s *PartitionStream) Commit(ctx context.Context) error { return publicErr(s.pm.Commit(ctx)) }

// Seek moves the partition's position (see Consumer.Seek).
func (s *PartitionStream) Seek(ctx context.Context, offset int64) error {
	return publicErr(s.pm.Seek(ctx, offset))
}

// SeekTime moves the partition's position to the first message at or
// after t (see Consumer.SeekTime).
func (s *PartitionStream) SeekTime(ctx context.Context, t time.Time) error {
	return publicErr(s.pm.SeekTime(ctx, t))
}

// Pause stops fetching the partition, keeping it (see Consumer.Pause).
func (s *PartitionStream) Pause(ctx context.Context) error { return publicErr(s.pm.Pause(ctx)) }

// Resume fetches a paused partition again.
func (s *PartitionStream) Resume() { s.pm.Resume() }

package partition

import (
	"context"
	"iter"
	"time"

	"github.com/zkgroup/zkgroup/internal/partlink"
	"github.com/zkgroup/zkgroup/offsets"
)

// Stream is the stream of one owned partition, handed out by
// manager.Consumer.EachPartition (manager.ModePartitions): one ownership
// of the partition, from its claim until it was revoked (drained,
// committed) or lost. Range over Each, or call Poll, in a goroutine of its
// own, so that partitions are processed in parallel. Nothing is fetched
// for the partition until its stream was taken from EachPartition.
// Safe for concurrent use.
type Stream struct {
	topic      string
	partition  int32
	generation uint64
	src        partlink.Source[Message, Batch] // the consumer's side
}

// Topic returns the partition's topic.
func (s *Stream) Topic() string { return s.topic }

// Partition returns the partition id.
func (s *Stream) Partition() int32 { return s.partition }

// TopicPartition names the stream's partition (manager.TopicPartition is
// the same type).
func (s *Stream) TopicPartition() offsets.TopicPartition {
	return offsets.TopicPartition{Topic: s.topic, Partition: s.partition}
}

// Generation identifies this ownership of the partition: the Generation
// of every message and batch it hands out.
func (s *Stream) Generation() uint64 { return s.generation }

// Each returns the partition's messages, one at a time, in offset order,
// as manager.Consumer.Each does for every partition:
//
//	for msg := range s.Each(ctx) {
//		process(msg)
//		msg.Ack()
//	}
//
// The loop ends when ctx ends or the stream ends (its partition was
// revoked or lost, or the consumer stopped); it yields no error. Before
// each message the partition is checked: nothing is yielded once the
// ownership ended (the rest of the batch is abandoned and goes to the next
// owner) and nothing while the ZooKeeper session is suspended (the loop
// waits). A loop left early (break, or ctx ended) keeps the rest of its
// batch for the next Each of the stream, which yields it first; a revoke
// abandons what is kept before its drain, so it never waits for it.
func (s *Stream) Each(ctx context.Context) iter.Seq2[*Message, error] { return s.src.Each(ctx) }

// Poll returns the partition's next batch, waiting until one is fetched:
// nothing is handed out until asked. It returns manager.ErrClosed once the
// stream ended (its partition was revoked or lost, or the consumer
// stopped), or ctx's error.
func (s *Stream) Poll(ctx context.Context) (*Batch, error) { return s.src.Poll(ctx) }

// Commit commits what is acked on this partition now, as
// manager.Consumer.Commit does for every partition, and returns once the
// offset store has it or ctx ends. An *Error wrapping ErrStopped once the
// stream's ownership ended.
func (s *Stream) Commit(ctx context.Context) error { return s.src.Commit(ctx) }

// Seek moves the partition's position to offset (>= 0, or
// sarama.OffsetOldest / sarama.OffsetNewest) and returns once it is in
// effect (see manager.Consumer.Seek): the next message handed out is the
// one at offset, messages handed out before and not acked are forgotten
// (their acks are no-ops), and the new position is committed at once. An
// *Error with Op OpSeek when the seek failed (wrapping zkgroup.ErrConfig
// for a negative offset), OpControl (wrapping ErrStopped) once the
// ownership ended, or ctx's error.
func (s *Stream) Seek(ctx context.Context, offset int64) error { return s.src.Seek(ctx, offset) }

// SeekTime is Seek to the first message whose timestamp is at or after t
// (the log end when there is none); a zero t is an *Error wrapping
// zkgroup.ErrConfig.
func (s *Stream) SeekTime(ctx context.Context, t time.Time) error { return s.src.SeekTime(ctx, t) }

// Pause stops fetching the partition without giving it up, and returns
// once no more batches are handed out (see manager.Consumer.Pause). An
// *Error wrapping ErrStopped once the ownership ended, or ctx's error.
func (s *Stream) Pause(ctx context.Context) error { return s.src.Pause(ctx) }

// Resume fetches a paused partition again. It does not wait.
func (s *Stream) Resume() { s.src.Resume() }

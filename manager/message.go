package manager

import (
	"time"
	"unsafe"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/partition"
)

// Message is one Kafka message handed out by a Consumer. Ack it (or
// Consumer.Ack it) once processed: a message may be acked from any
// goroutine, in any order, at most once (a second ack is a counted no-op);
// the acked offsets of a partition are committed up to the first one not
// acked. Its fields are the caller's to read; do not change them. Safe for
// concurrent use.
type Message struct {
	// Topic and Partition name the message's partition.
	Topic     string
	Partition int32
	// Offset is the message's position in its partition.
	Offset int64
	// Key and Value are the message's key and value (nil when absent).
	Key, Value []byte
	// Headers are the record headers (Kafka 0.11 and later).
	Headers []*sarama.RecordHeader
	// Timestamp is the message's timestamp (its producer's, or the
	// broker's append time, as the topic says).
	Timestamp time.Time
	// BlockTimestamp is the timestamp of the record batch the message came
	// in (the largest timestamp of that batch).
	BlockTimestamp time.Time

	owner *partition.Manager // the layout of partition.Message, to the last field
}

// Ack acks the message with the ownership of its partition that handed it
// out. Acking a message whose partition is no longer owned by that
// ownership (revoked, lost) is a counted no-op (AckStale): its offset goes
// to the next owner. Never blocks on I/O.
func (m *Message) Ack() AckResult { return AckResult(m.p().Ack()) }

// Abandon says the message will not be acked: a drain (revoke, Close)
// stops waiting for it, and nothing at or after its offset is committed,
// so the next owner gets it again. Use it when processing failed for good
// and the consumer is being closed.
func (m *Message) Abandon() { m.p().Abandon() }

// Generation identifies the ownership of the partition that handed the
// message out: equal for the messages of one ownership, different after
// the partition was revoked or lost and claimed again.
func (m *Message) Generation() uint64 { return m.p().Generation() }

// p is m as the partition manager's Message: the same memory (see
// TestMessageLayout).
func (m *Message) p() *partition.Message { return (*partition.Message)(unsafe.Pointer(m)) }

// messageOf is p's inverse.
func messageOf(pm *partition.Message) *Message { return (*Message)(unsafe.Pointer(pm)) }

// Batch is a run of one partition's messages handed out at once, in
// offset order (not necessarily contiguous: a compacted topic has gaps),
// by Poll or PartitionStream.Poll. It costs one hand-off and, acked as a
// whole (Ack) or up to an offset (AckUpTo), one lock for all its messages;
// its messages may also be acked one by one (Message.Ack), in any order.
// Every message of a batch counts toward PartitionConfig.MaxUnacked from
// the moment the batch is handed out, until acked (or abandoned). Safe for
// concurrent use.
type Batch struct {
	// Topic and Partition name the batch's partition.
	Topic     string
	Partition int32
	// Messages are the batch's messages (at least one), in offset order.
	// The slice and the messages are the caller's.
	Messages []*Message

	// The layout of partition.Batch, to the last field.
	owner     *partition.Manager
	acked     int
	suspended <-chan struct{}
	seeks     uint64
}

// Len returns the number of messages.
func (b *Batch) Len() int { return len(b.Messages) }

// FirstOffset returns the offset of the first message.
func (b *Batch) FirstOffset() int64 { return b.Messages[0].Offset }

// LastOffset returns the offset of the last message.
func (b *Batch) LastOffset() int64 { return b.Messages[len(b.Messages)-1].Offset }

// Generation identifies the ownership that handed the batch out (see
// Message.Generation).
func (b *Batch) Generation() uint64 { return b.p().Generation() }

// Ack acks every message of the batch not yet acked through it, under one
// lock. AckOK if any was counted, AckDuplicate if all were acked already,
// AckStale once the batch's ownership ended.
func (b *Batch) Ack() AckResult { return AckResult(b.p().Ack()) }

// AckUpTo acks the batch's messages at or below offset that were not yet
// acked through it: the way to ack a prefix when processing stopped in
// the middle. Results as for Ack; AckUnknown when none is at or below
// offset.
func (b *Batch) AckUpTo(offset int64) AckResult { return AckResult(b.p().AckUpTo(offset)) }

// Abandon abandons every message of the batch (see Message.Abandon).
func (b *Batch) Abandon() { b.p().Abandon() }

// p is b as the partition manager's Batch: the same memory (see
// TestMessageLayout).
func (b *Batch) p() *partition.Batch { return (*partition.Batch)(unsafe.Pointer(b)) }

// batchOf is p's inverse.
func batchOf(pb *partition.Batch) *Batch { return (*Batch)(unsafe.Pointer(pb)) }

// AckResult says what an ack did.
type AckResult int

// Ack results.
const (
	AckOK        AckResult = iota + 1 // counted; may advance the commit
	AckDuplicate                      // acked already
	AckStale                          // its partition is no longer owned by the ownership that handed it out: a no-op
	AckUnknown                        // no such handed-out offset
	AckInvalid                        // a nil message or an empty batch
)

func (r AckResult) String() string {
	switch r {
	case AckOK:
		return "ok"
	case AckDuplicate:
		return "duplicate"
	case AckStale:
		return "stale"
	case AckUnknown:
		return "unknown"
	case AckInvalid:
		return "invalid"
	}
	return "AckResult(?)"
}

package partition

import (
	"time"

	"github.com/IBM/sarama"
)

// Message is one Kafka message handed out by a manager.Consumer. Ack it
// once processed: a message may be acked from any goroutine, in any order,
// at most once (a second ack is a counted no-op); the acked offsets of a
// partition are committed up to the first one not acked. Its fields are
// the caller's to read; do not change them. Safe for concurrent use.
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
	// BlockTimestamp is the timestamp of the batch the message was stored
	// in: for a record batch (Kafka 0.11 and later) its largest timestamp
	// (the broker's append time when the topic says so); for the older
	// message formats, the timestamp of the compressed wrapper message
	// (the message's own when it was stored uncompressed), zero for
	// messages of format v0, which have none.
	BlockTimestamp time.Time

	batch *Batch // the batch it was handed out in; nil when built by hand
}

// Ack acks the message with the ownership of its partition that handed it
// out. Acking a message whose partition is no longer owned by that
// ownership (revoked, lost) is a counted no-op (AckStale): its offset goes
// to the next owner. AckInvalid for a nil message or one not handed out
// by a consumer. Never blocks on I/O.
func (m *Message) Ack() AckResult {
	if m == nil || m.batch == nil {
		return AckInvalid
	}
	return m.batch.owner.Ack(m.Offset)
}

// Abandon says the message will not be acked: a drain (revoke, Close)
// stops waiting for it, and nothing at or after its offset is committed,
// so the next owner gets it again. Use it when processing failed for good
// and the consumer is being closed. A later Ack still counts.
func (m *Message) Abandon() {
	if m == nil || m.batch == nil {
		return
	}
	m.batch.owner.Abandon(m.Offset)
}

// FencingToken is the fencing token of the claim under which the message
// was handed out: the creation zxid of the partition's owner node in
// ZooKeeper, which is higher for every later claim of the partition in the
// group (whatever the member), and which the commits of that claim carry.
// A sink outside Kafka uses it to refuse writes of an ownership that has
// ended (a member paused past its lease, the one case no check can cover):
// keep the highest token seen per partition, in the same transaction as the
// write, and refuse a write that carries a lower one. 0 for a message not
// handed out by a consumer.
func (m *Message) FencingToken() int64 {
	if m == nil || m.batch == nil {
		return 0
	}
	return m.batch.owner.FencingToken()
}

// Generation identifies the ownership of the partition that handed the
// message out: equal for the messages of one ownership, different after
// the partition was revoked or lost and claimed again (0 for a message
// not handed out by a consumer).
func (m *Message) Generation() uint64 {
	if m == nil || m.batch == nil {
		return 0
	}
	return m.batch.owner.Generation()
}

package partition

import (
	"time"

	"github.com/IBM/sarama"
)

// Message is one Kafka message handed out by a partition manager, in a
// Batch. Package manager hands it to the embedder as manager.Message, a
// type of the same memory layout (see manager's layout test): keep the two
// in step, field by field.
type Message struct {
	Topic          string
	Partition      int32
	Offset         int64
	Key, Value     []byte
	Headers        []*sarama.RecordHeader
	Timestamp      time.Time
	BlockTimestamp time.Time
	owner          *Manager
}

// Ack acks the message with the manager that handed it out; acking a
// message of a partition that is no longer owned by that manager is a
// counted no-op. Safe for concurrent use; never blocks on I/O.
func (m *Message) Ack() AckResult {
	if m == nil || m.owner == nil {
		return AckInvalid
	}
	return m.owner.ack(m.Offset)
}

// Abandon tells the manager that handed the message out that it will not
// be acked: a drain (revoke, Close) then stops waiting for it. Nothing at or
// after its offset is committed, so the next owner delivers it again.
func (m *Message) Abandon() {
	if m == nil || m.owner == nil {
		return
	}
	m.owner.Abandon(m.Offset)
}

// Generation identifies the ownership epoch that handed the message out:
// equal for messages of one Manager, different after a rebalance.
func (m *Message) Generation() uint64 {
	if m == nil || m.owner == nil {
		return 0
	}
	return m.owner.gen
}

// AckResult says what an ack did.
type AckResult int

// Ack results.
const (
	AckOK        AckResult = iota + 1 // counted; may advance the commit watermark
	AckDuplicate                      // this offset was acked already
	AckStale                          // the manager that handed it out has stopped: a no-op
	AckUnknown                        // no such delivered offset
	AckInvalid                        // nil message
)

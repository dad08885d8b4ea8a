package partition

import "github.com/IBM/sarama"

// Message is one Kafka message handed out by a partition manager. Its
// fields are those of sarama's ConsumerMessage. Ack it through the
// consumer's Ack (or Message.Ack) once processed; a message may be acked
// from any goroutine, in any order, at most once (a second ack is a
// counted no-op).
type Message struct {
	*sarama.ConsumerMessage
	owner *Manager
}

// Ack acks the message with the manager that handed it out; acking a
// message of a partition that is no longer owned by that manager is a
// counted no-op. Safe for concurrent use; never blocks on I/O.
func (m *Message) Ack() AckResult {
	if m == nil || m.owner == nil || m.ConsumerMessage == nil {
		return AckInvalid
	}
	return m.owner.ack(m.Offset)
}

// Abandon tells the manager that handed the message out that it will not
// be acked: a drain (revoke, Close) then stops waiting for it. Nothing at or
// after its offset is committed, so the next owner delivers it again. Use
// it when processing failed for good and the consumer is being closed.
func (m *Message) Abandon() {
	if m == nil || m.owner == nil || m.ConsumerMessage == nil {
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

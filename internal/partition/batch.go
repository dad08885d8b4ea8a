package partition

import "github.com/zkgroup/zkgroup/internal/tracker"

// Batch is a run of one partition's messages handed out at once, in
// offset order (not necessarily contiguous: a compacted topic has gaps).
// It costs one hand-off and, acked as a whole (Ack) or up to an offset
// (AckUpTo), one lock for all its messages. Its messages may also be
// acked one by one (Message.Ack), in any order. The guarantees of message
// delivery hold per batch: a batch is handed out only while the fence
// allows it, all its messages count toward MaxUnacked from the moment it
// is taken for delivery, and a batch not yet received when the manager
// stops is dropped whole (its messages go to the next owner).
type Batch struct {
	Topic     string
	Partition int32
	// Messages are the batch's messages (at least one). The slice and the
	// messages are the caller's.
	Messages []*Message
	owner    *Manager
	// acked: how many messages, from the first, were acked through the
	// batch (under owner.mu).
	acked int
	// suspended caches Fence.Suspended() for Pass (its caller only).
	suspended <-chan struct{}
	// seeks is owner.seeks when the batch was made.
	seeks uint64
}

// Len returns the number of messages.
func (b *Batch) Len() int { return len(b.Messages) }

// FirstOffset and LastOffset return the offsets of the first and the last
// message.
func (b *Batch) FirstOffset() int64 { return b.Messages[0].Offset }

// LastOffset returns the offset of the last message.
func (b *Batch) LastOffset() int64 { return b.Messages[len(b.Messages)-1].Offset }

// Generation identifies the ownership epoch that handed the batch out.
func (b *Batch) Generation() uint64 {
	if b == nil || b.owner == nil {
		return 0
	}
	return b.owner.gen
}

// Ack acks every message of the batch not acked yet. It returns AckOK if
// it counted any, AckDuplicate if all were acked already, AckStale after
// the manager that handed it out stopped (one stale ack is counted per
// call, not per message), AckUnknown when its messages were forgotten (a
// seek since). Safe for concurrent use; never blocks on I/O.
func (b *Batch) Ack() AckResult {
	if b == nil || b.owner == nil || len(b.Messages) == 0 {
		return AckInvalid
	}
	return b.owner.ackBatch(b, b.LastOffset())
}

// AckUpTo acks the batch's messages at or below offset not acked yet
// (those acked through an earlier AckUpTo are skipped at no cost). Results
// as Ack; an offset below the first message's acks nothing and returns
// AckUnknown.
func (b *Batch) AckUpTo(offset int64) AckResult {
	if b == nil || b.owner == nil || len(b.Messages) == 0 {
		return AckInvalid
	}
	return b.owner.ackBatch(b, offset)
}

// Abandon tells the manager that the batch's messages not acked yet will
// not be (see Message.Abandon): a drain stops waiting for them, and they
// are delivered again to the next owner.
func (b *Batch) Abandon() {
	if b == nil || b.owner == nil {
		return
	}
	for _, msg := range b.Messages {
		b.owner.Abandon(msg.Offset)
	}
}

// ackBatch acks b's messages from b.acked up to offset under one lock.
func (m *Manager) ackBatch(b *Batch, offset int64) AckResult {
	m.mu.Lock()
	if m.stopped || m.tracker == nil {
		m.mu.Unlock()
		m.countStale()
		return AckStale
	}
	var ok, dup, unknown int
	i := b.acked
	for ; i < len(b.Messages) && b.Messages[i].Offset <= offset; i++ {
		off := b.Messages[i].Offset
		switch m.tracker.Ack(off) {
		case tracker.AckOK:
			ok++
			if m.abandoned != nil && m.abandoned[off] {
				delete(m.abandoned, off)
			}
		case tracker.AckDuplicate:
			dup++
		default:
			unknown++
		}
	}
	alreadyThrough := i == b.acked && b.acked > 0 && (b.acked == len(b.Messages) || b.Messages[b.acked].Offset > offset)
	b.acked = i
	m.acks += uint64(ok)
	m.dupAcks += uint64(dup + unknown)
	m.mu.Unlock()
	switch {
	case ok > 0:
		select {
		case m.space <- struct{}{}:
		default:
		}
		return AckOK
	case dup > 0 || alreadyThrough:
		if alreadyThrough {
			m.mu.Lock()
			m.dupAcks++
			m.mu.Unlock()
		}
		return AckDuplicate
	default:
		return AckUnknown
	}
}

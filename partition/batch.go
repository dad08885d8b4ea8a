package partition

import "github.com/zkgroup/zkgroup/internal/partlink"

// Batch is a run of one partition's messages handed out at once, in
// offset order (not necessarily contiguous: a compacted topic has gaps),
// by manager.Consumer.Poll or Stream.Poll. It costs one hand-off and,
// acked as a whole (Ack) or up to an offset (AckUpTo), one lock for all
// its messages; its messages may also be acked one by one (Message.Ack),
// in any order. Every message of a batch counts toward Config.MaxUnacked
// from the moment the batch is handed out, until acked (or abandoned).
// Safe for concurrent use.
type Batch struct {
	// Topic and Partition name the batch's partition.
	Topic     string
	Partition int32
	// Messages are the batch's messages (at least one), in offset order.
	// The slice and the messages are the caller's.
	Messages []*Message

	// owner is the partition manager that handed the batch out (nil
	// when built by hand).
	owner partlink.Owner[Message, AckResult]
	// acked counts the messages, from the first, acked through Ack or
	// AckUpTo; owner reads and writes it under its lock.
	acked int
}

// Len returns the number of messages.
func (b *Batch) Len() int { return len(b.Messages) }

// FirstOffset returns the offset of the first message.
func (b *Batch) FirstOffset() int64 { return b.Messages[0].Offset }

// LastOffset returns the offset of the last message.
func (b *Batch) LastOffset() int64 { return b.Messages[len(b.Messages)-1].Offset }

// FencingToken is the fencing token of the claim that handed the batch
// out (see Message.FencingToken).
func (b *Batch) FencingToken() int64 {
	if b == nil || b.owner == nil {
		return 0
	}
	return b.owner.FencingToken()
}

// Generation identifies the ownership that handed the batch out (see
// Message.Generation).
func (b *Batch) Generation() uint64 {
	if b == nil || b.owner == nil {
		return 0
	}
	return b.owner.Generation()
}

// Ack acks every message of the batch not yet acked through it, under one
// lock. AckOK if any was counted, AckDuplicate if all were acked already,
// AckStale once the batch's ownership ended (one stale ack is counted per
// call, not per message), AckUnknown when its messages were forgotten (a
// seek since), AckInvalid for a nil or empty batch or one not handed out
// by a consumer. Never blocks on I/O.
func (b *Batch) Ack() AckResult {
	if b == nil || b.owner == nil || len(b.Messages) == 0 {
		return AckInvalid
	}
	return b.owner.AckBatch(b.Messages, &b.acked, b.LastOffset())
}

// AckUpTo acks the batch's messages at or below offset that were not yet
// acked through it (those acked through an earlier AckUpTo are skipped at
// no cost): the way to ack a prefix when processing stopped in the
// middle. Results as for Ack; AckUnknown when none is at or below offset.
func (b *Batch) AckUpTo(offset int64) AckResult {
	if b == nil || b.owner == nil || len(b.Messages) == 0 {
		return AckInvalid
	}
	return b.owner.AckBatch(b.Messages, &b.acked, offset)
}

// Abandon abandons every message of the batch (see Message.Abandon).
func (b *Batch) Abandon() {
	if b == nil || b.owner == nil {
		return
	}
	for _, m := range b.Messages {
		b.owner.Abandon(m.Offset)
	}
}

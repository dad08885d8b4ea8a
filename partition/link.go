package partition

import "github.com/zkgroup/zkgroup/internal/partlink"

// link lets the consumer build this package's values (see package
// partlink): its methods are the only code outside a value's own methods
// that sets their unexported fields.
type link struct{}

var _ partlink.Link[Message, Batch, Stream, AckResult] = link{}

func init() { partlink.Register[Message, Batch, Stream, AckResult](link{}) }

// InitBatch makes *b the batch of msgs handed out by owner.
func (link) InitBatch(b *Batch, topic string, partition int32, msgs []Message, owner partlink.Owner[Message, AckResult]) {
	ptrs := make([]*Message, len(msgs))
	for i := range msgs {
		msgs[i].batch = b
		ptrs[i] = &msgs[i]
	}
	b.Topic, b.Partition, b.Messages, b.owner = topic, partition, ptrs, owner
}

// NewStream returns the stream of one ownership, running on src.
func (link) NewStream(topic string, partition int32, generation uint64, src partlink.Source[Message, Batch]) *Stream {
	return &Stream{topic: topic, partition: partition, generation: generation, src: src}
}

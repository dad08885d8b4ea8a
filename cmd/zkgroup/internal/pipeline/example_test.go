package pipeline_test

import (
	"context"
	"fmt"
	"iter"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/pipeline"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
)

// printer handles messages one by one, or batches of at most two.
type printer struct{ batches bool }

func (printer) Handle(_ context.Context, m *manager.Message) (sink.Outcome, error) {
	fmt.Printf("handled %s/%d@%d\n", m.Topic, m.Partition, m.Offset)
	return sink.Delivered, nil
}

func (printer) HandleBatch(_ context.Context, msgs []*manager.Message) (int, error) {
	fmt.Printf("handled %s/%d@%d..%d\n", msgs[0].Topic, msgs[0].Partition, msgs[0].Offset, msgs[len(msgs)-1].Offset)
	return len(msgs), nil
}

func (p printer) BatchLimits() (sink.BatchLimits, bool) {
	return sink.BatchLimits{MaxMessages: 2}, p.batches
}

// oneStream hands out one batch of three messages.
type oneStream struct{ ch chan *manager.Batch }

func newOneStream() oneStream {
	s := oneStream{ch: make(chan *manager.Batch, 1)}
	b := &manager.Batch{Topic: "orders"}
	for o := int64(0); o < 3; o++ {
		b.Messages = append(b.Messages, &manager.Message{Topic: "orders", Offset: o})
	}
	s.ch <- b
	close(s.ch)
	return s
}

func (oneStream) Topic() string    { return "orders" }
func (oneStream) Partition() int32 { return 0 }
func (s oneStream) Each(context.Context) iter.Seq2[*manager.Message, error] {
	return func(yield func(*manager.Message, error) bool) {
		for b := range s.ch {
			for _, m := range b.Messages {
				if !yield(m, nil) {
					return
				}
			}
		}
	}
}

func (s oneStream) Poll(ctx context.Context) (*manager.Batch, error) {
	b, ok := <-s.ch
	if !ok {
		return nil, manager.ErrClosed
	}
	return b, nil
}

func Example() {
	streams := func(yield func(oneStream, error) bool) { yield(newOneStream(), nil) }
	p := pipeline.New(pipeline.Config{Handler: printer{}, Ack: func(m *manager.Message) { fmt.Println("acked", m.Offset) }})
	_ = pipeline.Run(context.Background(), p, streams)
	// Output:
	// handled orders/0@0
	// acked 0
	// handled orders/0@1
	// acked 1
	// handled orders/0@2
	// acked 2
}

// A handler that takes batches is handed them within its limits, and each
// is acked as a whole once handled.
func Example_batches() {
	streams := func(yield func(oneStream, error) bool) { yield(newOneStream(), nil) }
	p := pipeline.New(pipeline.Config{Handler: printer{batches: true}, AckUpTo: func(b *manager.Batch, offset int64) manager.AckResult {
		fmt.Println("acked up to", offset)
		return manager.AckOK
	}})
	_ = pipeline.Run(context.Background(), p, streams)
	// Output:
	// handled orders/0@0..1
	// acked up to 1
	// handled orders/0@2..2
	// acked up to 2
}

package pipeline_test

import (
	"context"
	"fmt"
	"github.com/zkgroup/zkgroup/manager"
	"iter"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/pipeline"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
)

type printer struct{}

func (printer) Handle(_ context.Context, m *manager.Message) (sink.Outcome, error) {
	fmt.Printf("handled %s/%d@%d\n", m.Topic, m.Partition, m.Offset)
	return sink.Delivered, nil
}

type oneStream struct{ ch chan *manager.Message }

func (oneStream) Topic() string    { return "orders" }
func (oneStream) Partition() int32 { return 0 }
func (s oneStream) Each(context.Context) iter.Seq2[*manager.Message, error] {
	return func(yield func(*manager.Message, error) bool) {
		for m := range s.ch {
			if !yield(m, nil) {
				return
			}
		}
	}
}

func Example() {
	s := oneStream{ch: make(chan *manager.Message, 2)}
	for o := int64(0); o < 2; o++ {
		s.ch <- &manager.Message{Topic: "orders", Offset: o}
	}
	close(s.ch)
	streams := func(yield func(oneStream, error) bool) { yield(s, nil) }
	p := pipeline.New(pipeline.Config{Handler: printer{}, Ack: func(m *manager.Message) { fmt.Println("acked", m.Offset) }})
	_ = pipeline.Run(context.Background(), p, streams)
	// Output:
	// handled orders/0@0
	// acked 0
	// handled orders/0@1
	// acked 1
}

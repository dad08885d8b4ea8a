package pipeline_test

import (
	"context"
	"fmt"
	"iter"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/pipeline"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/internal/partition"
)

type printer struct{}

func (printer) Handle(_ context.Context, m *sarama.ConsumerMessage) (sink.Outcome, error) {
	fmt.Printf("handled %s/%d@%d\n", m.Topic, m.Partition, m.Offset)
	return sink.Delivered, nil
}

type oneStream struct{ ch chan *partition.Message }

func (oneStream) Topic() string    { return "orders" }
func (oneStream) Partition() int32 { return 0 }
func (s oneStream) Each(context.Context) iter.Seq[*partition.Message] {
	return func(yield func(*partition.Message) bool) {
		for m := range s.ch {
			if !yield(m) {
				return
			}
		}
	}
}

func Example() {
	s := oneStream{ch: make(chan *partition.Message, 2)}
	for o := int64(0); o < 2; o++ {
		s.ch <- &partition.Message{ConsumerMessage: &sarama.ConsumerMessage{Topic: "orders", Offset: o}}
	}
	close(s.ch)
	streams := make(chan oneStream, 1)
	streams <- s
	close(streams)
	p := pipeline.New(pipeline.Config{Handler: printer{}, Ack: func(m *partition.Message) { fmt.Println("acked", m.Offset) }})
	pipeline.Run(context.Background(), p, streams)
	// Output:
	// handled orders/0@0
	// acked 0
	// handled orders/0@1
	// acked 1
}

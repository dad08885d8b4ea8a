package benchkit

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// PrefilledTopic returns topic, by default (empty) bench-<kind>-<partitions>x<want>,
// once Prefill made sure it holds want messages of valueLen bytes; it
// fails tb otherwise.
func PrefilledTopic(tb testing.TB, cl *testcluster.Cluster, topic, kind string, partitions int, want int64, valueLen int) string {
	tb.Helper()
	if topic == "" {
		topic = fmt.Sprintf("bench-%s-%dx%d", kind, partitions, want)
	}
	if err := Prefill(cl, topic, partitions, want, valueLen); err != nil {
		tb.Fatal(err)
	}
	return topic
}

// Prefill makes sure topic holds exactly want messages of valueLen bytes
// ('a'..'z' repeated) spread round-robin over its partitions (replication
// 1): it reuses a topic that does, fills a new one with sarama's async
// producer (acks from the leader, no compression, big batches), and fails
// on a topic that holds anything else. It blocks until the producer is
// closed.
func Prefill(cl *testcluster.Cluster, topic string, partitions int, want int64, valueLen int) error {
	if hwm, err := cl.HighWaterMarks(topic); err == nil {
		var sum int64
		for _, e := range hwm {
			sum += e
		}
		if sum == want && len(hwm) == partitions {
			Say("reusing topic %s: %d messages over %d partitions", topic, sum, partitions)
			return nil
		}
		if sum != 0 || len(hwm) != partitions {
			return fmt.Errorf("topic %s exists with %d messages over %d partitions; want %d over %d: pass another -topic", topic, sum, len(hwm), want, partitions)
		}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.CreateTopic(ctx, topic, int32(partitions), 1); err != nil {
		return err
	}
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.ClientID = "bench-prefill"
	cfg.Producer.RequiredAcks = sarama.WaitForLocal
	cfg.Producer.Compression = sarama.CompressionNone
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Errors = true
	cfg.Producer.Flush.Bytes = 512 << 10
	cfg.Producer.Flush.Messages = 10_000
	cfg.Producer.Flush.Frequency = 10 * time.Millisecond
	cfg.Producer.MaxMessageBytes = 900_000
	cfg.ChannelBufferSize = 10_000
	cfg.Producer.Retry.Max = 10 // a busy machine's brokers drop connections under a large fill
	cfg.Producer.Retry.Backoff = 500 * time.Millisecond
	p, err := sarama.NewAsyncProducer(cl.Addrs(), cfg)
	if err != nil {
		return err
	}
	var failed atomic.Int64
	var firstErr atomic.Value
	errsDone := make(chan struct{})
	go func() {
		defer close(errsDone)
		for e := range p.Errors() {
			if failed.Add(1) == 1 {
				firstErr.Store(e.Err)
			}
		}
	}()
	value := make([]byte, valueLen)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	for i := int64(0); i < want; i++ {
		p.Input() <- &sarama.ProducerMessage{Topic: topic, Partition: int32(i % int64(partitions)), Value: sarama.ByteEncoder(value)}
	}
	p.AsyncClose()
	<-errsDone
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("prefill: %d messages failed, first: %v", n, firstErr.Load())
	}
	Say("prefilled %s: %d messages of %d bytes over %d partitions in %v", topic, want, valueLen, partitions, time.Since(start).Round(time.Millisecond))
	return nil
}

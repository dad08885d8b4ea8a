package manager_test

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestCodecsFromKafkaProducer: topics written by Kafka's own producer
// (kafka-producer-perf-test --producer-props compression.type=X, for each
// codec) are read through the consumer exactly once: every offset below the
// high water mark of every partition once, no other, with the tool's
// record size. The test first checks, with a raw fetch, that the log holds
// batches of that codec, so a producer that ignored the setting fails it.
func TestCodecsFromKafkaProducer(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, records, size = 3, 3000, 200
	for _, codec := range []struct {
		name  string
		codec sarama.CompressionCodec
	}{
		{"none", sarama.CompressionNone}, {"gzip", sarama.CompressionGZIP}, {"snappy", sarama.CompressionSnappy},
		{"lz4", sarama.CompressionLZ4}, {"zstd", sarama.CompressionZSTD},
	} {
		t.Run(codec.name, func(t *testing.T) {
			topic, group, sub := newTopic(t, c, parts)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			if err := c.ProducerPerfTest(ctx, topic, records, size, codec.name); err != nil {
				t.Fatal(err)
			}
			hwm, err := c.HighWaterMarks(topic)
			if err != nil {
				t.Fatal(err)
			}
			total := int64(0)
			for _, h := range hwm {
				total += h
			}
			if total != records {
				t.Fatalf("high water marks %v sum to %d; the tool reported %d records sent", hwm, total, records)
			}
			checkLogCodec(t, c, topic, hwm, codec.codec)

			cons := mustJoin(t, c, group, sub, apiConfig(t))
			defer cons.Close()
			seen := map[int32]map[int64]int{}
			got := int64(0)
			rctx, rcancel := context.WithTimeout(t.Context(), time.Minute)
			defer rcancel()
			for m, err := range cons.Each(rctx) {
				if err != nil {
					t.Fatalf("after %d of %d messages: %v", got, total, err)
				}
				if m.Topic != topic || m.Offset < 0 || m.Offset >= hwm[m.Partition] {
					t.Fatalf("message %s/%d@%d: not in the topic's %v", m.Topic, m.Partition, m.Offset, hwm)
				}
				if len(m.Value) != size || m.Key != nil {
					t.Errorf("%d@%d: key %q, %d value bytes; want no key and %d bytes", m.Partition, m.Offset, m.Key, len(m.Value), size)
				}
				if seen[m.Partition] == nil {
					seen[m.Partition] = map[int64]int{}
				}
				seen[m.Partition][m.Offset]++
				if n := seen[m.Partition][m.Offset]; n > 1 {
					t.Errorf("%d@%d read %d times", m.Partition, m.Offset, n)
				}
				cons.Ack(m)
				if got++; got == total {
					break
				}
			}
			for p, h := range hwm {
				if n := int64(len(seen[p])); n != h {
					t.Errorf("partition %d: %d distinct offsets read; want %d", p, n, h)
				}
			}
			if err := cons.Close(); err != nil {
				t.Fatal(err)
			}
			// The tool's partitioner may leave a partition empty: nothing
			// read from it, nothing to commit (its manager may not even
			// have started before Close), so none committed is right too.
			committedAt := committed(t, c, group, topic, parts)
			for p := int32(0); p < parts; p++ {
				if committedAt[p] != hwm[p] && (hwm[p] != 0 || committedAt[p] != -1) {
					t.Errorf("partition %d: committed %d, log-end %d", p, committedAt[p], hwm[p])
				}
			}
		})
	}
}

// checkLogCodec fetches the first batch of every non-empty partition
// straight from its leader and fails unless it is compressed with want.
func checkLogCodec(t *testing.T, c *testcluster.Cluster, topic string, hwm map[int32]int64, want sarama.CompressionCodec) {
	t.Helper()
	client, err := sarama.NewClient(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for p, h := range hwm {
		if h == 0 {
			continue
		}
		leader, err := client.Leader(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		req := &sarama.FetchRequest{Version: 11, MaxWaitTime: 500, MinBytes: 1, MaxBytes: 1 << 20}
		req.AddBlock(topic, p, 0, 1<<20, -1)
		resp, err := leader.Fetch(req)
		if err != nil {
			t.Fatal(err)
		}
		b := resp.GetBlock(topic, p)
		if b == nil || b.Err != sarama.ErrNoError || len(b.RecordsSet) == 0 || b.RecordsSet[0].RecordBatch == nil {
			t.Fatalf("raw fetch of %s/%d: no record batch (%+v)", topic, p, b)
		}
		if got := b.RecordsSet[0].RecordBatch.Codec; got != want {
			t.Fatalf("%s/%d's first batch is compressed with %v; the producer was asked for %v", topic, p, got, want)
		}
	}
}

package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }

// consumeAll reads partition p of topic from offset `from` until it has n
// messages, and returns them.
func consumeAll(t *testing.T, c *testcluster.Cluster, topic string, p int32, from int64, n int) []*sarama.ConsumerMessage {
	t.Helper()
	consumer, err := sarama.NewConsumer(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer consumer.Close()
	// Right after a failover the brokers' metadata may still name the old
	// leader for a moment: retry, as any consumer must.
	var pc sarama.PartitionConsumer
	for attempt := 0; ; attempt++ {
		pc, err = consumer.ConsumePartition(topic, p, from)
		if err == nil {
			break
		}
		if attempt == 50 {
			t.Fatalf("consume %s/%d: %v", topic, p, err)
		}
		t.Logf("consume %s/%d: %v (retrying)", topic, p, err)
		time.Sleep(200 * time.Millisecond) // retry backoff, not synchronisation
	}
	defer pc.Close()
	out := make([]*sarama.ConsumerMessage, 0, n)
	deadline := time.After(60 * time.Second)
	for len(out) < n {
		select {
		case m := <-pc.Messages():
			out = append(out, m)
		case err := <-pc.Errors():
			// Transient while leadership moves; sarama retries on its own.
			t.Logf("consume %s/%d: %v (retrying)", topic, p, err)
		case <-deadline:
			t.Fatalf("consume %s/%d: got %d of %d messages", topic, p, len(out), n)
		}
	}
	return out
}

// TestSmoke proves the harness: 3 brokers, a topic of 8 partitions with
// replication factor 3, 10,000 messages written and read back, the leader of
// partition 0 killed with SIGKILL, and partition 0 readable (and writable)
// again through its new leader.
func TestSmoke(t *testing.T) {
	start := time.Now()
	c := testcluster.Start(t, testcluster.Brokers(3))
	t.Logf("3-broker cluster started in %v (ZooKeeper %s, brokers %v)", time.Since(start).Round(time.Millisecond), c.ZooKeeperConnect(), c.Addrs())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const topic, partitions, n = "smoke", 8, 10000
	testcluster.MustCreateTopic(t, c, topic, partitions, 3)
	produced, err := c.Produce(topic, partitions, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(produced.Offsets) != n {
		t.Fatalf("produced %d acknowledged messages, want %d", len(produced.Offsets), n)
	}

	seen := make(map[string]bool, n)
	for p := int32(0); p < partitions; p++ {
		msgs := consumeAll(t, c, topic, p, sarama.OffsetOldest, int(produced.PerPartition[p]))
		for _, m := range msgs {
			k, v := string(m.Key), string(m.Value)
			if seen[k] {
				t.Fatalf("duplicate key %s at %s/%d@%d", k, topic, p, m.Offset)
			}
			seen[k] = true
			var i int
			if _, err := fmt.Sscanf(k, topic+"-k-%d", &i); err != nil {
				t.Fatalf("unexpected key %q: %v", k, err)
			}
			if v != testcluster.Value(topic, i) {
				t.Fatalf("key %s has value %q, want %q", k, v, testcluster.Value(topic, i))
			}
			if want := produced.Offsets[i]; want.Partition != p || want.Offset != m.Offset {
				t.Fatalf("message %d read at %d/%d, produced at %d/%d", i, p, m.Offset, want.Partition, want.Offset)
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("read %d distinct messages, want %d", len(seen), n)
	}

	leader, err := c.Leader(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := c.KillBroker(leader); err != nil {
		t.Fatal(err)
	}
	newLeader, err := c.WaitLeader(ctx, topic, 0, leader)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("partition 0: leader %d killed, broker %d took over after %v", leader, newLeader, time.Since(killed).Round(time.Millisecond))
	if newLeader == leader {
		t.Fatalf("leader still %d after kill", leader)
	}

	// Every message is still there through the new leader, and the
	// partition takes new writes.
	before := produced.PerPartition[0]
	msgs := consumeAll(t, c, topic, 0, sarama.OffsetOldest, int(before))
	if got := msgs[len(msgs)-1].Offset; got != before-1 {
		t.Fatalf("last offset of partition 0 after failover = %d, want %d", got, before-1)
	}
	more, err := c.Produce(topic, partitions, n, partitions) // one more message per partition
	if err != nil {
		t.Fatal(err)
	}
	tail := consumeAll(t, c, topic, 0, before, 1)
	if want := testcluster.Value(topic, n); string(tail[0].Value) != want || more.PerPartition[0] != 1 {
		t.Fatalf("after failover read %q, want %q", tail[0].Value, want)
	}
	pids := c.PIDs()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			t.Errorf("java process %d still running after Close", pid)
		}
	}
	sort.Ints(pids)
}

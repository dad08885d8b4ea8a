package testcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestMetadataFollowsChanges: once CreateTopic or AddPartitions returned,
// a client made from any one broker sees every partition with a leader,
// at once (no refresh), and Produce writes to the partitions just added.
func TestMetadataFollowsChanges(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	testcluster.MustCreateTopic(t, c, topic, 1, 2)
	check := func(total int32) {
		t.Helper()
		for _, addr := range c.Addrs() {
			client, err := sarama.NewClient([]string{addr}, testcluster.SaramaConfig())
			if err != nil {
				t.Fatal(err)
			}
			parts, err := client.Partitions(topic)
			if err != nil || int32(len(parts)) != total {
				client.Close()
				t.Fatalf("%d partitions: a client bootstrapped from %s lists %v (%v)", total, addr, parts, err)
			}
			for _, p := range parts {
				if _, err := client.Leader(topic, p); err != nil {
					client.Close()
					t.Fatalf("%d partitions: a client bootstrapped from %s has no leader of %d: %v", total, addr, p, err)
				}
			}
			client.Close()
		}
	}
	check(1)
	for total := int32(2); total <= 8; total++ {
		if err := c.AddPartitions(ctx, topic, total); err != nil {
			t.Fatal(err)
		}
		check(total)
		// Message i goes to partition i mod total: the last is new.
		testcluster.MustProduce(t, c, topic, total, 0, int(total))
	}
	hwm := testcluster.MustHighWaterMarks(t, c, topic)
	if len(hwm) != 8 || hwm[7] != 1 || hwm[0] != 7 {
		t.Fatalf("high watermarks %v; want 8 partitions, 7 messages in partition 0, 1 in partition 7", hwm)
	}
}

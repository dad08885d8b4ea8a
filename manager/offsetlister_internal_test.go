package manager

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/leadercache"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestOffsetQueriesKeepNoSecondMetadata: a fresh group's partitions start
// from offsets asked of their leaders (ListOffsets), which the lister
// finds in the consuming client's metadata: the offsets client, which
// keeps every topic it is asked a leader of, does not hold the topic's,
// and the consuming client keeps it in its lean cache alone, not in
// sarama's client beneath (package internal/leadercache).
func TestOffsetQueriesKeepNoSecondMetadata(t *testing.T) {
	cons, topic := joinOne(t, 4, func(c *testcluster.Cluster, topic string) {
		testcluster.MustProduce(t, c, topic, 4, 0, 8)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Every message read: every partition's start offset was asked.
	for range 8 {
		select {
		case m := <-cons.Messages():
			m.Ack()
		case <-ctx.Done():
			t.Fatal("the messages were not all read")
		}
	}
	// (sarama's coordinator lookup may have read __consumer_offsets'.)
	if topics, err := cons.offsetClient.Topics(); err != nil || slices.Contains(topics, topic) {
		t.Errorf("the offsets client holds the metadata of %v (%v)", topics, err)
	}
	if topics, err := cons.client.Topics(); err != nil || len(topics) != 1 {
		t.Errorf("the consuming client holds the metadata of %v (%v), want %s's", topics, err, topic)
	}
	lc, ok := cons.client.(*leadercache.Client)
	if !ok {
		t.Fatalf("the consuming client is a %T, want a *leadercache.Client", cons.client)
	}
	if topics, err := lc.Client.Topics(); err != nil || slices.Contains(topics, topic) {
		t.Errorf("sarama's client beneath the lean cache holds the metadata of %v (%v)", topics, err)
	}
}

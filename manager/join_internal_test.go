package manager

import (
	"context"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/subscription"
)

// joinOne creates a topic of partitions on the shared cluster and joins
// a group of its own to it with a consumer that the test's end closes;
// before with the cluster and the topic, so that messages can be written
// before the consumer starts.
func joinOne(t *testing.T, partitions int32, before func(c *testcluster.Cluster, topic string)) (*Consumer, string) {
	t.Helper()
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "t")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.CreateTopic(ctx, topic, partitions, 1); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(c, topic)
	}
	sub, err := subscription.Static(topic)
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewConfig()
	cfg.SessionTimeout = 6 * time.Second
	cons, err := Join(ctx, testcluster.Name(t, "g"), sub, c.ZooKeeperConnect(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cons.Close(); err != nil {
			t.Error(err)
		}
	})
	return cons, topic
}

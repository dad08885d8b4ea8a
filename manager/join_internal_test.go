package manager

import (
	"context"
	"errors"
	"slices"
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

// TestJoinStepsLogged: Join's step timer adds each step's duration and
// returns its error; the log value groups the four steps by name.
func TestJoinStepsLogged(t *testing.T) {
	var s joinSteps
	boom := errors.New("boom")
	if err := s.time(&s.leaders, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("time returned %v, want the step's error", err)
	}
	if s.leaders <= 0 || s.zookeeper != 0 {
		t.Fatalf("steps %+v: want leaders > 0 and nothing else", s)
	}
	var got []string
	for _, a := range s.LogValue().Group() {
		got = append(got, a.Key)
	}
	if want := []string{"zookeeper", "clients", "leaders", "register"}; !slices.Equal(got, want) {
		t.Fatalf("log value keys %v, want %v", got, want)
	}
}

package metadata_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

func TestLeaderFailover(t *testing.T) {
	c := testcluster.Start(t, testcluster.Brokers(3))
	ctx := ctxT(t)
	topic := testcluster.Name(t, "t")
	if err := c.CreateTopic(ctx, topic, 3, 3); err != nil {
		t.Fatal(err)
	}
	w := open(t, c, only(topic))
	s := await(t, w, "leaders", led(topic, 3))
	old := s.Topics[topic][0].Leader
	if got, err := c.Leader(topic, 0); err != nil || got != old {
		t.Fatalf("snapshot leader %d, ZooKeeper says %d (%v)", old, got, err)
	}
	if err := c.KillBroker(old); err != nil {
		t.Fatal(err)
	}
	next, err := c.WaitLeader(ctx, topic, 0, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader of partition 0 moved from %d to %d", old, next)
	await(t, w, "the new leader", func(s metadata.Snapshot) bool {
		ps := s.Topics[topic]
		return len(ps) == 3 && ps[0].Leader == next
	})
}

func TestZooKeeperRestart(t *testing.T) {
	c := testcluster.Start(t, testcluster.Brokers(1))
	ctx := ctxT(t)
	before := testcluster.Name(t, "before")
	if err := c.CreateTopic(ctx, before, 2, 1); err != nil {
		t.Fatal(err)
	}
	leaks := goleak.IgnoreCurrent()
	w, err := metadata.Open(c.ZooKeeperConnect(), nil, testConfig(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = w.Close()
		}
	}()
	await(t, w, "the first topic", led(before, 2))

	if err := c.StopZooKeeper(); err != nil {
		t.Fatal(err)
	}
	if err := c.StartZooKeeper(ctx); err != nil {
		t.Fatal(err)
	}
	after := testcluster.Name(t, "after")
	// The broker reconnects to ZooKeeper on its own time: retry creating.
	for attempt := 1; ; attempt++ {
		err := c.CreateTopic(ctx, after, 3, 1)
		if err == nil {
			break
		}
		if attempt == 30 {
			t.Fatal(err)
		}
		t.Logf("create after restart: %v (retrying)", err)
		time.Sleep(time.Second) // retry backoff, not synchronisation
	}
	await(t, w, "the topic created after the restart", led(after, 3))
	await(t, w, "the first topic still there", led(before, 2))

	// Close while ZooKeeper is down: it returns once the client gave up,
	// and leaves no goroutine behind.
	if err := c.StopZooKeeper(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	closed = true
	if err := w.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	t.Logf("Close with ZooKeeper down took %v", time.Since(start))
	// The harness's waiter of the restarted ZooKeeper process is its own.
	goleak.VerifyNone(t, leaks, goleak.IgnoreAnyFunction("github.com/zkgroup/zkgroup/internal/testcluster.(*process).start.func1"))
	if err := c.StartZooKeeper(ctx); err != nil { // lets the brokers stop quickly
		t.Fatal(err)
	}
}

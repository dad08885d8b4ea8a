package metadata_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestBrokerCrashKeepsView kills the broker that leads partition 0 and
// starts it again: the live leaders move, the watcher's view and version
// do not, and Changes never fires. Then a topic created and partitions
// added each fire Changes once.
func TestBrokerCrashKeepsView(t *testing.T) {
	c := testcluster.Start(t, testcluster.Brokers(3))
	ctx := ctxT(t)
	topic := testcluster.Name(t, "t")
	testcluster.MustCreateTopic(t, c, topic, 6, 3)
	w := open(t, c, nil)
	s := await(t, w, "the topic", led(topic, 6))
	preferred(t, s)
	v := s.Version
	victim, err := c.Leader(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.KillBroker(victim); err != nil {
		t.Fatal(err)
	}
	next, err := c.WaitLeader(ctx, topic, 0, victim)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("live leader of partition 0 moved from %d to %d", victim, next)
	awaitResyncs(t, w, 2)
	noChange(t, w, "a broker crash", v)
	if got := w.Snapshot(); !metadata.EqualTopics(got.Topics, s.Topics) {
		t.Errorf("the view changed with the live leaders: %v, was %v", got.Topics, s.Topics)
	}

	if err := c.StartBroker(ctx, victim); err != nil {
		t.Fatal(err)
	}
	awaitResyncs(t, w, 2)
	noChange(t, w, "a broker restart", v)
	if err := w.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}

	created := testcluster.Name(t, "created")
	testcluster.MustCreateTopic(t, c, created, 2, 2)
	changed(t, w, "a topic creation", v+1, led(created, 2))
	awaitResyncs(t, w, 2)
	noChange(t, w, "a topic creation (twice)", v+1)

	if err := c.AddPartitions(ctx, created, 5); err != nil {
		t.Fatal(err)
	}
	s = changed(t, w, "adding partitions", v+2, led(created, 5))
	awaitResyncs(t, w, 2)
	noChange(t, w, "adding partitions (twice)", v+2)
	preferred(t, s)
}

func TestZooKeeperRestart(t *testing.T) {
	c := testcluster.Start(t, testcluster.Brokers(1))
	ctx := ctxT(t)
	before := testcluster.Name(t, "before")
	testcluster.MustCreateTopic(t, c, before, 2, 1)
	leaks := goleak.IgnoreCurrent()
	zs := dial(t, c.ZooKeeperConnect())
	w, err := metadata.OpenSession(zs, nil, testConfig(), testLogger(t))
	if err != nil {
		zs.Close()
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = w.Close()
			zs.Close()
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

	// Close, and the session's, while ZooKeeper is down: they return once
	// the client gave up, and leave no goroutine behind.
	if err := c.StopZooKeeper(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	closed = true
	if err := w.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	zs.Close()
	t.Logf("Close with ZooKeeper down took %v", time.Since(start))
	// The harness's waiter of the restarted ZooKeeper process is its own.
	goleak.VerifyNone(t, leaks, goleak.IgnoreAnyFunction("github.com/zkgroup/zkgroup/internal/testcluster.(*process).start.func1"))
	if err := c.StartZooKeeper(ctx); err != nil { // lets the brokers stop quickly
		t.Fatal(err)
	}
}

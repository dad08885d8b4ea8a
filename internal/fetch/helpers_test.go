package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"go.uber.org/goleak"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

var leakOpts = []goleak.Option{
	goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
}

// checkLeaks verifies at the end of the test that no goroutine started
// during it is left (register it first: cleanups run last in, first out).
func checkLeaks(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, append(leakOpts, ignore)...) })
}

func testLog(testing.TB) *slog.Logger {
	if os.Getenv("FETCH_DEBUG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return nil
}

// sharedClient returns the shared cluster and a client of it, closed at
// the end of the test, after which no goroutine started by the test may be
// left (checkLeaks).
func sharedClient(t *testing.T) (*testcluster.Cluster, sarama.Client) {
	t.Helper()
	c := testcluster.Shared(t)
	checkLeaks(t)
	return c, newClient(t, c)
}

// onEachKafka runs test on the shared Kafka 3.9 (ZooKeeper mode) and
// Kafka 4 (KRaft) clusters, as subtests kafka3 and kafka4, each with the
// leak check (registered after the shared cluster started).
func onEachKafka(t *testing.T, test func(*testing.T, *testcluster.Cluster)) {
	for _, tc := range []struct {
		name    string
		cluster func(testing.TB) *testcluster.Cluster
	}{{"kafka3", testcluster.Shared}, {"kafka4", testcluster.SharedKRaft}} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cluster(t)
			checkLeaks(t)
			test(t, c)
		})
	}
}

// ownTwoBrokers starts a cluster of two brokers for the test alone and
// names its topic. It registers checkLeaks first, so that the check runs
// after the cluster stopped.
func ownTwoBrokers(t *testing.T) (*testcluster.Cluster, string) {
	t.Helper()
	checkLeaks(t)
	return testcluster.Start(t, testcluster.Brokers(2)), testcluster.Name(t, "")
}

// failoverFetcher returns a new client of c and a Fetcher over it with cfg
// and a 100 ms RetryBackoff, quick to follow a partition's new leader.
func failoverFetcher(t *testing.T, c *testcluster.Cluster, cfg fetch.Config) (sarama.Client, *fetch.Fetcher) {
	t.Helper()
	client := newClient(t, c)
	cfg.RetryBackoff = 100 * time.Millisecond
	return client, newFetcher(t, client, cfg)
}

// newClient returns a sarama client of c, closed at the end of the test.
func newClient(t testing.TB, c *testcluster.Cluster) sarama.Client {
	t.Helper()
	cfg := testcluster.SaramaConfig()
	cl, err := sarama.NewClient(c.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// mockClient returns a sarama client of mb at version v, without an
// ApiVersions request (the mock broker's scripts answer none), its
// config then changed by tune. The caller closes it.
func mockClient(t testing.TB, mb *sarama.MockBroker, v sarama.KafkaVersion, tune ...func(*sarama.Config)) sarama.Client {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.ApiVersionsRequest = false
	for _, f := range tune {
		f(cfg)
	}
	cl, err := sarama.NewClient([]string{mb.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// newFetcher returns a Fetcher over client, closed at the end of the test.
func newFetcher(t *testing.T, client sarama.Client, cfg fetch.Config) *fetch.Fetcher {
	t.Helper()
	f, err := fetch.New(client, cfg, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("fetcher close: %v", err)
		}
	})
	return f
}

// got is one record as read.
type got struct {
	offset     int64
	key, value string
	headers    []*sarama.RecordHeader
	ts         time.Time
}

// reader reads one partition, checking order as it goes.
type reader struct {
	t       *testing.T
	p       *fetch.Partition
	recs    []got
	takes   int
	reports []error
	last    *fetch.Records // the latest taken
	moves   int            // empty Records taken (position moves only)
}

// readN takes until n records in all were read (or fails the test after
// timeout). Offsets must increase strictly.
func (r *reader) readN(n int, timeout time.Duration) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for len(r.recs) < n {
		recs, err := r.p.Take(ctx)
		if errors.Is(err, fetch.ErrFetch) {
			r.reports = append(r.reports, err)
			continue
		}
		if err != nil {
			r.t.Fatalf("%s/%d: after %d records: %v", r.p.Topic(), r.p.ID(), len(r.recs), err)
		}
		r.takes++
		prev := r.last
		r.last = recs
		if recs.Len() == 0 {
			// Only a position move: past what was taken before.
			if prev != nil && recs.NextOffset <= prev.NextOffset {
				r.t.Fatalf("%s/%d: an empty Records to %d after one to %d", r.p.Topic(), r.p.ID(), recs.NextOffset, prev.NextOffset)
			}
			r.moves++
			continue
		}
		k := 0
		for rec := range recs.All() {
			if l := len(r.recs); l > 0 && rec.Offset <= r.recs[l-1].offset {
				r.t.Fatalf("%s/%d: offset %d after %d", r.p.Topic(), r.p.ID(), rec.Offset, r.recs[l-1].offset)
			}
			r.recs = append(r.recs, got{rec.Offset, string(rec.Key), string(rec.Value), rec.Headers, rec.Timestamp})
			k++
		}
		if k != recs.Len() {
			r.t.Fatalf("%s/%d: Len %d, iterated %d", r.p.Topic(), r.p.ID(), recs.Len(), k)
		}
		if last := r.recs[len(r.recs)-1].offset; recs.NextOffset <= last {
			r.t.Fatalf("%s/%d: NextOffset %d not after the last record %d", r.p.Topic(), r.p.ID(), recs.NextOffset, last)
		}
	}
}

// awaitNext takes until a Records moves the position to next; what it
// takes must hold no record (position moves only).
func (r *reader) awaitNext(next int64, timeout time.Duration) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for r.last == nil || r.last.NextOffset < next {
		recs, err := r.p.Take(ctx)
		if errors.Is(err, fetch.ErrFetch) {
			continue
		}
		if err != nil {
			r.t.Fatalf("%s/%d: awaiting NextOffset %d: %v", r.p.Topic(), r.p.ID(), next, err)
		}
		if recs.Len() != 0 {
			r.t.Fatalf("%s/%d: awaiting a move to %d: %d records from %d", r.p.Topic(), r.p.ID(), next, recs.Len(), recs.NextOffset)
		}
		r.last = recs
		r.moves++
	}
	if r.last.NextOffset != next {
		r.t.Fatalf("%s/%d: NextOffset %d; want %d", r.p.Topic(), r.p.ID(), r.last.NextOffset, next)
	}
}

// createTopicOn creates topic with its partitions all led by broker
// (replication 1), so that one fetch loop serves them all.
func createTopicOn(t *testing.T, c *testcluster.Cluster, topic string, partitions int32, broker int32) {
	t.Helper()
	createOn(t, c, topic, partitions, broker, false)
}

// recreateTopicOn creates topic again, as createTopicOn does, once its
// deletion completed.
func recreateTopicOn(t *testing.T, c *testcluster.Cluster, topic string, partitions int32, broker int32) {
	t.Helper()
	createOn(t, c, topic, partitions, broker, true)
}

// createOn creates topic with its partitions all led by broker; again:
// the topic was deleted, and TOPIC_ALREADY_EXISTS means its deletion is
// still under way.
func createOn(t *testing.T, c *testcluster.Cluster, topic string, partitions int32, broker int32, again bool) {
	t.Helper()
	cfg := testcluster.SaramaConfig()
	cfg.Admin.Timeout = time.Minute // a thousand partitions on a busy machine
	admin, err := sarama.NewClusterAdmin(c.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	assign := map[int32][]int32{}
	for p := range partitions {
		assign[p] = []int32{broker}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: assign}, false)
		if err == nil {
			break
		}
		if !again || !errors.Is(err, sarama.ErrTopicAlreadyExists) || ctx.Err() != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond) // the deletion completes in the background
	}
	for p := range partitions {
		if _, err := c.WaitLeader(ctx, topic, p, -1); err != nil {
			t.Fatal(err)
		}
	}
	// Every broker told, so that any client made from now on sees it all.
	if err := c.WaitMetadata(ctx, topic, partitions); err != nil {
		t.Fatal(err)
	}
}

// produceSized writes n messages of size bytes to each of partitions,
// value "<partition>-<i>" padded, in batches of batch messages per
// request (codec compressed). It blocks until all are acknowledged.
func produceSized(t testing.TB, c *testcluster.Cluster, topic string, partitions []int32, n, size, batch int, codec sarama.CompressionCodec) {
	t.Helper()
	cfg := testcluster.SaramaConfig()
	cfg.Producer.Compression = codec
	cfg.Producer.Idempotent = false
	cfg.Net.MaxOpenRequests = 5
	cfg.Producer.Return.Successes = true
	cfg.Producer.Flush.Messages = batch
	cfg.Producer.Flush.MaxMessages = batch
	cfg.Producer.Flush.Frequency = 20 * time.Millisecond
	cfg.Producer.MaxMessageBytes = 8 << 20
	// A broker a test before this one restarted may still be taking its
	// partitions back: retry for 6 s rather than sarama's 2.5.
	cfg.Producer.Retry.Max, cfg.Producer.Retry.Backoff = 30, 200*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := c.TopicClient(ctx, cfg, topic, slices.Max(partitions)+1)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	// Every message answered before Close: a message retried (a leader
	// not yet known everywhere) while the producer shuts down fails with
	// ErrShuttingDown.
	total := n * len(partitions)
	answered := make(chan *sarama.ProducerError, 1) // the first error, or nil once all are answered
	go func() {
		var first *sarama.ProducerError
		for k := 0; k < total; k++ {
			select {
			case _, ok := <-p.Successes():
				if !ok {
					return
				}
			case e, ok := <-p.Errors():
				if !ok {
					return
				}
				if first == nil {
					first = e
				}
			}
		}
		answered <- first
	}()
	for i := range n {
		for _, part := range partitions {
			v := make([]byte, size)
			copy(v, fmt.Sprintf("%d-%d", part, i))
			p.Input() <- &sarama.ProducerMessage{Topic: topic, Partition: part, Key: sarama.StringEncoder(strconv.Itoa(i)), Value: sarama.ByteEncoder(v)}
		}
	}
	select {
	case e := <-answered:
		if e != nil {
			_ = p.Close()
			t.Fatalf("producing to %s: partition %d: %v", topic, e.Msg.Partition, e.Err)
		}
	case <-ctx.Done():
		_ = p.Close()
		t.Fatalf("producing to %s: not every message answered within a minute", topic)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

const rackSelector = "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector"

// TestRack: three brokers in racks a, b and c, each with the rack-aware
// replica selector; a fetcher in rack b reads four partitions, three led
// by brokers 1 and 3 with a follower on broker 2, one led by broker 2.
// Every record is served by broker 2 (the followers the leaders name, and
// the leader in rack b). Broker 2 then stops: fetching goes on from the
// leaders (1 and 3 serve what is written next) and every record is read
// exactly once (partition 3 moves to broker 1, a new leader epoch). On
// Kafka 3.9 (ZooKeeper mode) and Kafka 4 (KRaft).
func TestRack(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []testcluster.Option
	}{{"kafka3", nil}, {"kafka4", []testcluster.Option{testcluster.KRaft(), testcluster.Chroot("/zkgroup")}}} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t) // first: its check runs after the cluster stopped
			opts := append([]testcluster.Option{testcluster.Brokers(3),
				testcluster.BrokerProps(1, "broker.rack=a", rackSelector),
				testcluster.BrokerProps(2, "broker.rack=b", rackSelector),
				testcluster.BrokerProps(3, "broker.rack=c", rackSelector)}, tc.opts...)
			testRack(t, testcluster.Start(t, opts...))
		})
	}
}

func testRack(t *testing.T, c *testcluster.Cluster) {
	topic := testcluster.Name(t, "")
	assign := map[int32][]int32{0: {1, 2}, 1: {3, 2}, 2: {1, 2}, 3: {2, 1}}
	createTopicAssigned(t, c, topic, assign)
	const P, N = 4, 300
	parts := []int32{0, 1, 2, 3}
	produceSized(t, c, topic, parts, N, 100, 20, sarama.CompressionNone)

	cfg := fetch.NewConfig()
	cfg.Rack = "b"
	cfg.ReplicaRecheck = 10 * time.Minute
	_, f := failoverFetcher(t, c, cfg)
	readers := make([]*reader, P)
	for i, part := range parts {
		p, err := f.Add(topic, part, 0)
		if err != nil {
			t.Fatal(err)
		}
		readers[i] = &reader{t: t, p: p}
	}
	readAll := func(n int) {
		t.Helper()
		var wg sync.WaitGroup
		for _, r := range readers {
			wg.Go(func() { r.readN(n, 2*time.Minute) })
		}
		wg.Wait()
	}
	readAll(N)
	st := f.Stats()
	t.Logf("first %d per partition: records by broker %v", N, st.RecordsByBroker)
	if got := st.RecordsByBroker[2]; got != P*N {
		t.Fatalf("broker 2 (rack b) served %d of %d records: %v", got, P*N, st.RecordsByBroker)
	}

	t.Log("stopping broker 2")
	if err := c.StopBroker(2); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.WaitLeader(ctx, topic, 3, 2); err != nil {
		t.Fatal(err)
	}
	produceSized(t, c, topic, parts, N, 100, 20, sarama.CompressionNone)
	readAll(2 * N)
	st2 := f.Stats()
	t.Logf("after broker 2 stopped: records by broker %v", st2.RecordsByBroker)
	if st2.RecordsByBroker[2] != st.RecordsByBroker[2] {
		t.Errorf("broker 2 served %d records after it stopped", st2.RecordsByBroker[2]-st.RecordsByBroker[2])
	}
	if got := st2.RecordsByBroker[1] + st2.RecordsByBroker[3]; got != P*N {
		t.Errorf("the leaders served %d records after broker 2 stopped; want %d", got, P*N)
	}
	for i, r := range readers {
		for j, g := range r.recs {
			if g.offset != int64(j) {
				t.Fatalf("partition %d: record %d has offset %d", parts[i], j, g.offset)
			}
			if want := fmt.Sprintf("%d-%d", parts[i], j%N); string(g.value[:len(want)]) != want {
				t.Fatalf("partition %d: record %d is %q", parts[i], j, g.value[:len(want)])
			}
		}
		if len(r.recs) != 2*N {
			t.Errorf("partition %d: read %d records; want %d", parts[i], len(r.recs), 2*N)
		}
		for _, err := range r.reports {
			if !errors.Is(err, fetch.ErrFetch) {
				t.Errorf("partition %d: report %v", parts[i], err)
			}
		}
	}
}

// createTopicAssigned creates topic with the replicas assign gives (the
// first one leads) and waits until every partition has its leader.
func createTopicAssigned(t *testing.T, c *testcluster.Cluster, topic string, assign map[int32][]int32, configs ...string) {
	t.Helper()
	cfg := testcluster.SaramaConfig()
	cfg.Admin.Timeout = time.Minute
	admin, err := sarama.NewClusterAdmin(c.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	entries := map[string]*string{}
	for i := 0; i+1 < len(configs); i += 2 {
		entries[configs[i]] = &configs[i+1]
	}
	detail := &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: assign, ConfigEntries: entries}
	if err := admin.CreateTopic(topic, detail, false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for p, replicas := range assign {
		if !testcluster.Poll(time.Minute, 100*time.Millisecond, func() bool {
			l, err := c.Leader(topic, p)
			return err == nil && l == replicas[0]
		}) {
			t.Fatalf("%s/%d: leader is not broker %d", topic, p, replicas[0])
		}
	}
	if err := c.WaitMetadata(ctx, topic, int32(len(assign))); err != nil {
		t.Fatal(err)
	}
}

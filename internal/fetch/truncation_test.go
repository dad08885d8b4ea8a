package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestTruncation: an unclean leader election truncates records the
// fetcher already handed over, and the fetcher says so. Two brokers, one
// partition on both (broker 1 leads) with unclean.leader.election.enable:
// A records are written to both and read; broker 2 stops, B records are
// written to broker 1 alone (acks=1) and read (position A+B); broker 1
// stops and broker 2 starts: it becomes leader (unclean) with its log
// ending at A, and C > B new records are written there. Without leader
// epochs the fetcher would go on at A+B and skip the new records A to
// A+B-1 unseen. It stops the partition with a *TruncationError (both
// offsets: A+B, A; matching ErrLogTruncated and ErrOffsetOutOfRange);
// given offset A back (the test's policy), it reads the C new records.
func TestTruncation(t *testing.T) {
	c, topic := ownTwoBrokers(t)
	createTopicAssigned(t, c, topic, map[int32][]int32{0: {1, 2}},
		"unclean.leader.election.enable", "true", "min.insync.replicas", "1")
	const A, B, C = 50, 20, 40
	produceAcks(t, c, topic, "a", A, sarama.WaitForAll)

	_, f := failoverFetcher(t, c, fetch.NewConfig())
	p, err := f.Add(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{t: t, p: p}
	r.readN(A, time.Minute)

	t.Log("stopping broker 2")
	if err := c.StopBroker(2); err != nil {
		t.Fatal(err)
	}
	produceAcks(t, c, topic, "b", B, sarama.WaitForLocal)
	r.readN(A+B, time.Minute)

	t.Log("stopping broker 1, starting broker 2")
	if err := c.StopBroker(1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.StartBroker(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitLeader(ctx, topic, 0, 1); err != nil {
		t.Fatal(err)
	}
	produceAcks(t, c, topic, "c", C, sarama.WaitForLocal)

	// The fetcher reports the truncation and stops the partition.
	var trunc *fetch.TruncationError
	for trunc == nil {
		recs, err := p.Take(ctx)
		switch {
		case errors.Is(err, fetch.ErrFetch):
			continue // broker 1 lost
		case errors.As(err, &trunc):
		case err != nil:
			t.Fatalf("after %d records: %v", len(r.recs), err)
		default:
			t.Fatalf("%d records from %d after the unclean election, before any error", recs.Len(), recs.NextOffset)
		}
	}
	t.Logf("reported: %v", trunc)
	if trunc.Offset != A+B || trunc.EndOffset != A {
		t.Errorf("truncation at position %d, log end %d; want %d, %d", trunc.Offset, trunc.EndOffset, A+B, A)
	}
	err = error(trunc)
	if !errors.Is(err, fetch.ErrLogTruncated) || !errors.Is(err, fetch.ErrOffsetOutOfRange) {
		t.Errorf("%v: does not match ErrLogTruncated and ErrOffsetOutOfRange", err)
	}
	if _, err := p.Poll(); !errors.As(err, &trunc) {
		t.Errorf("Poll after the stop: %v; want the truncation again", err)
	}
	if st := f.Stats(); st.Truncations != 1 {
		t.Errorf("stats: %d truncations", st.Truncations)
	}

	// The policy: back to where the new leader's log diverges.
	if err := p.SetOffset(trunc.EndOffset); err != nil {
		t.Fatal(err)
	}
	r = &reader{t: t, p: p}
	r.readN(C, time.Minute)
	for i, g := range r.recs {
		if want := fmt.Sprintf("c-%d", i); g.offset != int64(A+i) || g.value != want {
			t.Fatalf("after the reset, record %d: offset %d value %q; want %d %q", i, g.offset, g.value, A+i, want)
		}
	}
}

// produceAcks writes n records "<prefix>-<i>" to partition 0 of topic
// with the given acks, not idempotent (acks=1 needs that), one at a time.
func produceAcks(t *testing.T, c *testcluster.Cluster, topic, prefix string, n int, acks sarama.RequiredAcks) {
	t.Helper()
	cfg := testcluster.SaramaConfig()
	cfg.Producer.Idempotent = false
	cfg.Producer.RequiredAcks = acks
	cfg.Producer.Retry.Max = 30
	cfg.Producer.Retry.Backoff = 200 * time.Millisecond
	prod, err := sarama.NewSyncProducer(c.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range n {
		msg := &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i))}
		if _, _, err := prod.SendMessage(msg); err != nil {
			t.Fatalf("producing %s-%d: %v", prefix, i, err)
		}
	}
}

package listoffsets_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/IBM/sarama"
	"github.com/rcrowley/go-metrics"

	"github.com/zkgroup/zkgroup/internal/listoffsets"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestListerAgreesAndMerges asks for the oldest and newest offset of 64
// partitions at once: every answer equals sarama's own GetOffset, and the
// lister needs far fewer requests than questions.
func TestListerAgreesAndMerges(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "")
	const P = 64
	testcluster.MustCreateTopic(t, c, topic, P, 1)
	testcluster.MustProduce(t, c, topic, P, 0, 3*P+5)
	plain, err := sarama.NewClient(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	cfg := testcluster.SaramaConfig()
	cfg.MetricRegistry = metrics.NewRegistry()
	own, err := sarama.NewClient(c.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	l := listoffsets.New(own)
	defer l.Close()
	if _, err := l.Offset(topic, 0, sarama.OffsetNewest); err != nil { // connects
		t.Fatal(err)
	}
	requests := func() int64 { return metrics.GetOrRegisterMeter("request-rate", cfg.MetricRegistry).Count() }
	before := requests()

	type key struct {
		p int32
		t int64
	}
	got := map[key]int64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := int32(0); p < P; p++ {
		for _, ts := range []int64{sarama.OffsetOldest, sarama.OffsetNewest} {
			wg.Go(func() {
				off, err := l.Offset(topic, p, ts)
				if err != nil {
					t.Errorf("partition %d, time %d: %v", p, ts, err)
					return
				}
				mu.Lock()
				got[key{p, ts}] = off
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	asked := requests() - before
	for k, off := range got {
		want, err := plain.GetOffset(topic, k.p, k.t)
		if err != nil {
			t.Fatal(err)
		}
		if off != want {
			t.Errorf("partition %d, time %d: lister says %d, sarama %d", k.p, k.t, off, want)
		}
	}
	if len(got) != 2*P {
		t.Fatalf("%d answers, want %d", len(got), 2*P)
	}
	// 128 questions to 3 brokers: merged, far fewer requests. One per
	// question would be 128; callers that arrive while a request is in
	// flight share the next one.
	if asked >= 2*P/2 {
		t.Errorf("%d ListOffsets requests for %d questions: not merged", asked, 2*P)
	}
	t.Logf("%d questions, %d requests", 2*P, asked)
}

// TestListerUnknownPartition returns sarama's error for a partition that
// does not exist, rather than hang or answer.
func TestListerUnknownPartition(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "")
	testcluster.MustCreateTopic(t, c, topic, 2, 1)
	own, err := sarama.NewClient(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	l := listoffsets.New(own)
	defer l.Close()
	_, err = l.Offset(topic, 7, sarama.OffsetNewest)
	if !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("partition 7 of 2: %v, want %v", err, sarama.ErrUnknownTopicOrPartition)
	}
	off, err := listoffsets.Wrap(own, l).GetOffset(topic, 1, sarama.OffsetNewest)
	if err != nil || off != 0 {
		t.Fatalf("empty partition through Wrap: %d, %v; want 0", off, err)
	}
}

// TestListerClose: the Lister asks over connections of its own, not the
// client's, which Close closes; Offset then fails with ErrClosed, and a
// second Close does nothing.
func TestListerClose(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "")
	testcluster.MustCreateTopic(t, c, topic, 1, 1)
	own, err := sarama.NewClient(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	l := listoffsets.New(own)
	if _, err := l.Offset(topic, 0, sarama.OffsetOldest); err != nil {
		t.Fatal(err)
	}
	leader, err := own.Leader(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := listoffsets.Conn(l, leader.ID())
	if conn == nil || conn == leader {
		t.Fatalf("the lister's connection to broker %d is %p, the client's %p: want one of its own", leader.ID(), conn, leader)
	}
	if ok, _ := conn.Connected(); !ok {
		t.Fatal("the lister's connection is not open after an answer")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := conn.Connected(); ok {
		t.Error("Close left the lister's connection open")
	}
	if ok, _ := leader.Connected(); !ok {
		t.Error("Close closed the client's connection")
	}
	if _, err := l.Offset(topic, 0, sarama.OffsetOldest); !errors.Is(err, listoffsets.ErrClosed) {
		t.Errorf("Offset after Close: %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

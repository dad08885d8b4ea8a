package leadercache

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"go.uber.org/goleak"
)

// go-metrics' meter goroutine is global, started by sarama's first
// client and never stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"))
}

// metadata is a v11 Metadata response naming brokers and, per topic,
// partitions (leader, epoch) under a topic id.
type metadata struct {
	brokers map[int32]string
	topics  map[string]topicSpec
}

type topicSpec struct {
	id    byte
	err   sarama.KError
	parts []partSpec
}

type partSpec struct {
	id, leader, epoch int32
	err               sarama.KError
}

func (m metadata) response() *sarama.MetadataResponse {
	r := &sarama.MetadataResponse{Version: 11}
	for id, addr := range m.brokers {
		r.AddBroker(addr, id)
	}
	for name, ts := range m.topics {
		tm := r.AddTopic(name, ts.err)
		tm.Uuid = sarama.Uuid{ts.id}
		for _, p := range ts.parts {
			tm.Partitions = append(tm.Partitions, &sarama.PartitionMetadata{Version: 11, Err: p.err, ID: p.id,
				Leader: p.leader, LeaderEpoch: p.epoch, Replicas: []int32{p.leader}, Isr: []int32{p.leader}, OfflineReplicas: []int32{}})
		}
	}
	return r
}

func serve(mb *sarama.MockBroker, m metadata) {
	mb.SetHandlerByMap(map[string]sarama.MockResponse{"MetadataRequest": sarama.NewMockWrapper(m.response())})
}

func testConfig() *sarama.Config {
	conf := sarama.NewConfig()
	conf.Version = sarama.V2_8_0_0
	conf.ApiVersionsRequest = false
	conf.Metadata.Full = false // as a member's
	conf.Metadata.Retry.Max = 2
	conf.Metadata.Retry.Backoff = time.Millisecond
	conf.Net.DialTimeout = 2 * time.Second
	return conf
}

func newClient(t *testing.T, seeds ...string) *Client {
	t.Helper()
	inner, err := sarama.NewClient(seeds, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(inner, seeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readOne serves a topic t of one partition (leader 1) on mb and
// returns a client that read it.
func readOne(t *testing.T, mb *sarama.MockBroker) *Client {
	t.Helper()
	serve(mb, metadata{brokers: map[int32]string{1: mb.Addr()},
		topics: map[string]topicSpec{"t": {id: 1, parts: []partSpec{{0, 1, 0, 0}}}}})
	c := newClient(t, mb.Addr())
	if err := c.RefreshMetadata("t"); err != nil {
		t.Fatal(err)
	}
	return c
}

func metadataRequests(mb *sarama.MockBroker) int {
	n := 0
	for _, rr := range mb.History() {
		if _, ok := rr.Request.(*sarama.MetadataRequest); ok {
			n++
		}
	}
	return n
}

// TestLeaderAndEpoch: leaders and epochs come from one Metadata request
// and are kept; an unknown partition is read once more, then reported as
// sarama reports it; the broker named is the response's.
func TestLeaderAndEpoch(t *testing.T) {
	mb := sarama.NewMockBroker(t, 1)
	defer mb.Close()
	serve(mb, metadata{brokers: map[int32]string{1: mb.Addr(), 2: "127.0.0.1:9"},
		topics: map[string]topicSpec{"t": {id: 1, parts: []partSpec{{0, 1, 5, 0}, {1, 2, 7, 0}}}}})
	c := newClient(t, mb.Addr())

	b, epoch, err := c.LeaderAndEpoch("t", 0)
	if err != nil || b.ID() != 1 || b.Addr() != mb.Addr() || epoch != 5 {
		t.Fatalf("t/0: %v %d %v, want broker 1 at %s, epoch 5", b, epoch, err, mb.Addr())
	}
	b, epoch, err = c.LeaderAndEpoch("t", 1)
	if err != nil || b.ID() != 2 || b.Addr() != "127.0.0.1:9" || epoch != 7 {
		t.Fatalf("t/1: %v %d %v, want broker 2, epoch 7", b, epoch, err)
	}
	if n := metadataRequests(mb); n != 1 {
		t.Fatalf("%d Metadata requests for two partitions of a topic, want 1", n)
	}
	if ids, err := c.Partitions("t"); err != nil || fmt.Sprint(ids) != "[0 1]" {
		t.Fatalf("Partitions: %v %v", ids, err)
	}
	if _, _, err := c.LeaderAndEpoch("t", 5); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("t/5: %v, want ErrUnknownTopicOrPartition", err)
	}
	if n := metadataRequests(mb); n != 2 {
		t.Fatalf("%d Metadata requests after an unknown partition, want 2", n)
	}
	if b, err := c.Broker(2); err != nil || b.Addr() != "127.0.0.1:9" {
		t.Fatalf("Broker(2): %v %v", b, err)
	}
	if _, err := c.Broker(3); !errors.Is(err, sarama.ErrBrokerNotFound) {
		t.Fatalf("Broker(3): %v, want ErrBrokerNotFound", err)
	}
	if n := len(c.Brokers()); n != 2 {
		t.Fatalf("%d brokers, want 2", n)
	}
}

// TestRefreshLeavesTopicsAsGiven: RefreshMetadata sorts a copy of the
// topics it is given, never the caller's slice.
func TestRefreshLeavesTopicsAsGiven(t *testing.T) {
	mb := sarama.NewMockBroker(t, 1)
	defer mb.Close()
	c := readOne(t, mb)
	topics := []string{"t", "b", "a", "t"}
	if err := c.RefreshMetadata(topics...); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(topics) != "[t b a t]" {
		t.Fatalf("the caller's topics became %v", topics)
	}
}

// TestLeaderMoves: a refresh takes the new leader and epoch; a lagging
// broker's older epoch of the same topic does not replace a newer one,
// while a topic created again (another id) starts its epochs anew.
func TestLeaderMoves(t *testing.T) {
	mb := sarama.NewMockBroker(t, 1)
	defer mb.Close()
	brokers := map[int32]string{1: mb.Addr(), 2: "127.0.0.1:9"}
	at := func(id byte, leader, epoch int32) metadata {
		return metadata{brokers: brokers, topics: map[string]topicSpec{"t": {id: id, parts: []partSpec{{0, leader, epoch, 0}}}}}
	}
	c := newClient(t, mb.Addr())
	check := func(leader, epoch int32) {
		t.Helper()
		if err := c.RefreshMetadata("t"); err != nil {
			t.Fatal(err)
		}
		b, e, err := c.LeaderAndEpoch("t", 0)
		if err != nil || b.ID() != leader || e != epoch {
			t.Fatalf("t/0: %v %d %v, want broker %d epoch %d", b, e, err, leader, epoch)
		}
	}
	serve(mb, at(1, 1, 5))
	check(1, 5)
	serve(mb, at(1, 2, 6))
	check(2, 6)
	serve(mb, at(1, 1, 4)) // a broker whose metadata lags
	check(2, 6)
	if id, ok := c.TopicID("t"); !ok || id != (sarama.Uuid{1}) {
		t.Fatalf("TopicID(t) = %v %v, want the id read", id, ok)
	}
	serve(mb, at(2, 1, 0)) // the topic deleted and created again
	check(1, 0)
	if id, ok := c.TopicID("t"); !ok || id != (sarama.Uuid{2}) {
		t.Fatalf("TopicID(t) = %v %v after the topic was created again, want its new id", id, ok)
	}
	if _, ok := c.TopicID("u"); ok {
		t.Fatal("TopicID of a topic never read is known")
	}
}

// TestNoLeaderRetried: a partition without leader is asked for again
// (Metadata.Retry.Max more times), then reported as sarama reports it.
func TestNoLeaderRetried(t *testing.T) {
	mb := sarama.NewMockBroker(t, 1)
	defer mb.Close()
	serve(mb, metadata{brokers: map[int32]string{1: mb.Addr()},
		topics: map[string]topicSpec{"t": {id: 1, parts: []partSpec{{0, -1, -1, sarama.ErrLeaderNotAvailable}}}}})
	c := newClient(t, mb.Addr())
	_, _, err := c.LeaderAndEpoch("t", 0)
	if !errors.Is(err, sarama.ErrLeaderNotAvailable) {
		t.Fatalf("%v, want ErrLeaderNotAvailable", err)
	}
	if n := metadataRequests(mb); n != 3 {
		t.Fatalf("%d Metadata requests, want 3 (Retry.Max 2)", n)
	}
	if !c.PartitionNotReadable("t", 0) {
		t.Fatal("a partition without leader is readable")
	}
}

// TestUnknownTopicDropped: a topic the cluster no longer has is dropped
// from the cache.
func TestUnknownTopicDropped(t *testing.T) {
	mb := sarama.NewMockBroker(t, 1)
	defer mb.Close()
	c := readOne(t, mb)
	serve(mb, metadata{brokers: map[int32]string{1: mb.Addr()},
		topics: map[string]topicSpec{"t": {id: 1, err: sarama.ErrUnknownTopicOrPartition}}})
	if err := c.RefreshMetadata("t"); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("%v, want ErrUnknownTopicOrPartition", err)
	}
	if ts, _ := c.Topics(); len(ts) != 0 {
		t.Fatalf("topics %v kept, want none", ts)
	}
}

// TestOutOfBrokers: no broker answering is sarama's ErrOutOfBrokers.
func TestOutOfBrokers(t *testing.T) {
	mb := sarama.NewMockBroker(t, 1)
	c := readOne(t, mb)
	mb.Close()
	if err := c.RefreshMetadata("t"); !errors.Is(err, sarama.ErrOutOfBrokers) {
		t.Fatalf("%v (%T), want ErrOutOfBrokers", err, err)
	}
}

// TestClose: after Close every call fails with ErrClosed, Close included.
func TestClose(t *testing.T) {
	mb := sarama.NewMockBroker(t, 1)
	defer mb.Close()
	c := readOne(t, mb)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.LeaderAndEpoch("t", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("LeaderAndEpoch after Close: %v", err)
	}
	if err := c.RefreshMetadata("t"); !errors.Is(err, ErrClosed) {
		t.Fatalf("RefreshMetadata after Close: %v", err)
	}
	if err := c.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

// TestKeepsLessThanSarama: the metadata of 100 topics × 100 partitions
// held by a Client against sarama's client holding the same (the reason
// for the package): less than a quarter of the heap.
func TestKeepsLessThanSarama(t *testing.T) {
	mb := sarama.NewMockBroker(t, 1)
	defer mb.Close()
	m := metadata{brokers: map[int32]string{1: mb.Addr(), 2: "127.0.0.1:9", 3: "127.0.0.1:10"}, topics: map[string]topicSpec{}}
	var names []string
	for i := range 100 {
		ts := topicSpec{id: byte(i)}
		for p := range int32(100) {
			ts.parts = append(ts.parts, partSpec{p, 1 + p%3, 1, 0})
		}
		name := fmt.Sprintf("t%03d", i)
		m.topics[name] = ts
		names = append(names, name)
	}
	serve(mb, m)
	held := func(refresh func() (sarama.Client, error)) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c, err := refresh()
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(c)
		_ = c.Close()
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
	}
	sar := held(func() (sarama.Client, error) {
		c, err := sarama.NewClient([]string{mb.Addr()}, testConfig())
		if err != nil {
			return nil, err
		}
		return c, c.RefreshMetadata(names...)
	})
	lean := held(func() (sarama.Client, error) {
		inner, err := sarama.NewClient([]string{mb.Addr()}, testConfig())
		if err != nil {
			return nil, err
		}
		c, err := New(inner, []string{mb.Addr()})
		if err != nil {
			return nil, err
		}
		return c, c.RefreshMetadata(names...)
	})
	t.Logf("10,000 partitions held: sarama's client %d KB, leadercache %d KB", sar/1024, lean/1024)
	if lean*4 > sar {
		t.Fatalf("leadercache holds %d bytes against sarama's %d: not under a quarter", lean, sar)
	}
}

package manager

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// fakeMetaClient serves metadata from memory: per topic, the replica list
// of each partition (index = partition id). Safe for concurrent use.
type fakeMetaClient struct {
	mu         sync.Mutex
	topics     map[string][][]int32
	refreshErr error
	partErr    map[string]error
}

func newFakeMetaClient() *fakeMetaClient {
	return &fakeMetaClient{topics: map[string][][]int32{}, partErr: map[string]error{}}
}

func (f *fakeMetaClient) set(topic string, replicas ...[]int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topics[topic] = replicas
}

func (f *fakeMetaClient) remove(topic string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.topics, topic)
}

func (f *fakeMetaClient) RefreshMetadata(...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refreshErr
}

func (f *fakeMetaClient) Topics() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Keys(f.topics)), nil
}

func (f *fakeMetaClient) Partitions(topic string) ([]int32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.partErr[topic]; err != nil {
		return nil, err
	}
	ps, ok := f.topics[topic]
	if !ok {
		return nil, sarama.ErrUnknownTopicOrPartition
	}
	ids := make([]int32, len(ps))
	for i := range ps {
		ids[len(ps)-1-i] = int32(i) // any order
	}
	return ids, nil
}

func (f *fakeMetaClient) Replicas(topic string, id int32) ([]int32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps := f.topics[topic]
	if int(id) >= len(ps) {
		return nil, sarama.ErrUnknownTopicOrPartition
	}
	return slices.Clone(ps[id]), nil
}

// awaitPolls waits until k finished n more polls: with n >= 2 a whole poll
// ran after the call, so everything changed before it has been seen.
func awaitPolls(t *testing.T, k *kafkaMeta, n uint64) {
	t.Helper()
	want := k.polls.Load() + n
	testcluster.Await(t, 30*time.Second, time.Millisecond, "kafka metadata polls", func() bool { return k.polls.Load() >= want })
}

// expectNoChange fails when Changes holds a signal or the version is not
// want.
func expectNoChange(t *testing.T, k *kafkaMeta, what string, want uint64) {
	t.Helper()
	select {
	case <-k.Changes():
		t.Errorf("%s fired Changes", what)
	default:
	}
	if v := k.Snapshot().Version; v != want {
		t.Errorf("after %s: version %d, want %d", what, v, want)
	}
}

// expectChange waits for one receive from Changes and checks the version.
func expectChange(t *testing.T, k *kafkaMeta, what string, want uint64) metadata.Snapshot {
	t.Helper()
	select {
	case <-k.Changes():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not fire Changes", what)
	}
	s := k.Snapshot()
	if s.Version != want {
		t.Fatalf("after %s: version %d, want %d", what, s.Version, want)
	}
	return s
}

func startKafkaMeta(t *testing.T, c kafkaMetaClient, filter func(string) bool, every time.Duration) *kafkaMeta {
	t.Helper()
	k, err := newKafkaMeta(c, filter, every, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return k
}

func TestKafkaMetaChangesOnlyOnAssignment(t *testing.T) {
	f := newFakeMetaClient()
	f.set("a", []int32{1, 2}, []int32{2, 3})
	f.set("skip", []int32{1})
	k := startKafkaMeta(t, f, func(t string) bool { return !strings.HasPrefix(t, "skip") }, 5*time.Millisecond)
	s := k.Snapshot()
	want := map[string][]metadata.Partition{
		"a":    {{Topic: "a", ID: 0, Leader: 1, Replicas: []int32{1, 2}}, {Topic: "a", ID: 1, Leader: 2, Replicas: []int32{2, 3}}},
		"skip": nil,
	}
	if s.Version != 1 || !metadata.EqualTopics(s.Topics, want) {
		t.Fatalf("initial snapshot v%d %v, want %v", s.Version, s.Topics, want)
	}
	awaitPolls(t, k, 2)
	expectNoChange(t, k, "polls with nothing changed", 1)

	// Failures keep the view and are no change.
	f.mu.Lock()
	f.refreshErr = errors.New("metadata request failed")
	f.mu.Unlock()
	awaitPolls(t, k, 2)
	f.mu.Lock()
	f.refreshErr = nil
	f.partErr["a"] = sarama.ErrLeaderNotAvailable
	f.mu.Unlock()
	awaitPolls(t, k, 2)
	expectNoChange(t, k, "failed reads", 1)
	f.mu.Lock()
	delete(f.partErr, "a")
	f.mu.Unlock()

	version := uint64(1)
	steps := []struct {
		what   string
		change func()
		check  func(metadata.Snapshot) bool
	}{
		{"a/1 reassigned", func() { f.set("a", []int32{1, 2}, []int32{3, 2}) },
			func(s metadata.Snapshot) bool { return s.Topics["a"][1].Leader == 3 }},
		{"a partition added", func() { f.set("a", []int32{1, 2}, []int32{3, 2}, []int32{2, 1}) },
			func(s metadata.Snapshot) bool { return len(s.Topics["a"]) == 3 && s.Topics["a"][2].Leader == 2 }},
		{"b created", func() { f.set("b", []int32{4}) },
			func(s metadata.Snapshot) bool { return len(s.Topics["b"]) == 1 }},
		{"an unselected topic created", func() { f.set("skip2", []int32{4}) },
			func(s metadata.Snapshot) bool { ps, ok := s.Topics["skip2"]; return ok && ps == nil }},
		{"b deleted", func() { f.remove("b") },
			func(s metadata.Snapshot) bool { _, ok := s.Topics["b"]; return !ok }},
	}
	for _, st := range steps {
		st.change()
		version++
		if s := expectChange(t, k, st.what, version); !st.check(s) {
			t.Fatalf("after %s: %v", st.what, s.Topics)
		}
		awaitPolls(t, k, 2)
		expectNoChange(t, k, st.what+" (twice)", version)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

func TestKafkaMetaDefaultPoll(t *testing.T) {
	k := startKafkaMeta(t, newFakeMetaClient(), nil, 0)
	if k.every != defaultKafkaMetaPoll {
		t.Fatalf("poll interval %v, want %v", k.every, defaultKafkaMetaPoll)
	}
	if _, err := newKafkaMeta(&fakeMetaClient{refreshErr: sarama.ErrOutOfBrokers}, nil, 0, nil); !errors.Is(err, sarama.ErrOutOfBrokers) {
		t.Fatalf("a failed first read: %v", err)
	}
}

// TestKafkaMetaIgnoresLiveLeaders runs a real sarama client against a mock
// broker whose metadata responses move the live leaders and take a replica
// offline (a broker crash): no change. Then the assignment changes.
func TestKafkaMetaIgnoresLiveLeaders(t *testing.T) {
	b := sarama.NewMockBroker(t, 1)
	defer b.Close()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0
	cfg.ApiVersionsRequest = false
	cfg.Metadata.RefreshFrequency = 0
	cfg.Metadata.Retry.Max = 0
	version := sarama.NewMetadataRequest(cfg.Version, nil).Version
	serve := func(leaders []int32, replicas [][]int32, offline []int32) {
		r := &sarama.MetadataResponse{Version: version, ControllerID: 1}
		r.AddBroker(b.Addr(), 1)
		for p, rs := range replicas {
			r.AddTopicPartition("t", int32(p), leaders[p], rs, rs, offline, sarama.ErrNoError)
		}
		b.SetHandlerByMap(map[string]sarama.MockResponse{"MetadataRequest": sarama.NewMockWrapper(r)})
	}
	assignment := [][]int32{{1, 2, 3}, {2, 3, 1}}
	serve([]int32{1, 2}, assignment, nil)
	client, err := sarama.NewClient([]string{b.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	k := startKafkaMeta(t, client, nil, 5*time.Millisecond)
	s := k.Snapshot()
	if ps := s.Topics["t"]; len(ps) != 2 || ps[0].Leader != 1 || ps[1].Leader != 2 || !slices.Equal(ps[1].Replicas, []int32{2, 3, 1}) {
		t.Fatalf("initial partitions %+v", ps)
	}

	serve([]int32{3, 3}, assignment, []int32{1, 2}) // brokers 1 and 2 crashed
	awaitPolls(t, k, 2)
	expectNoChange(t, k, "live leaders moving", 1)
	if ps := k.Snapshot().Topics["t"]; ps[0].Leader != 1 || ps[1].Leader != 2 {
		t.Fatalf("leaders after the crash %+v, want the preferred 1 and 2", ps)
	}

	serve([]int32{3, 3}, [][]int32{{3, 1, 2}, {2, 3, 1}}, nil)
	if s := expectChange(t, k, "a new preferred leader", 2); s.Topics["t"][0].Leader != 3 {
		t.Fatalf("after the reassignment %+v", s.Topics["t"])
	}
}

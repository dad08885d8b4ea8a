package offsets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/logcheck"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }

// testLogger logs through t.Log.
func testLogger(t testing.TB) *slog.Logger { return logcheck.TestLogger(t, slog.LevelDebug) }

// verifyNoLeaks, called at the start of a test (after testcluster.Shared),
// fails the test if goroutines started during it still run after its
// cleanups: it registers the check as the first cleanup, which runs last.
// It ignores go-metrics' process-wide meter ticker, which sarama starts
// once and which never stops.
func verifyNoLeaks(t *testing.T) {
	opts := []goleak.Option{goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick")}
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

func TestKafkaConfigValidate(t *testing.T) {
	if err := NewKafkaConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if !NewKafkaConfig().Verify {
		t.Fatal("Verify is off by default")
	}
	for _, tc := range []struct {
		change func(*KafkaConfig)
		field  string
	}{
		{func(c *KafkaConfig) { c.CommitTimeout = 0 }, "KafkaConfig.CommitTimeout"},
		{func(c *KafkaConfig) { c.CommitTimeout = -time.Second }, "KafkaConfig.CommitTimeout"},
		{func(c *KafkaConfig) { c.CloseTimeout = 0 }, "KafkaConfig.CloseTimeout"},
		{func(c *KafkaConfig) { c.RetryBackoff = 0 }, "KafkaConfig.RetryBackoff"},
		{func(c *KafkaConfig) { c.RetryBackoffMax = c.RetryBackoff / 2 }, "KafkaConfig.RetryBackoffMax"},
	} {
		c := NewKafkaConfig()
		tc.change(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Validate() = %v, want ErrConfig naming %s", err, tc.field)
		}
	}
}

// mockKafka is a single sarama MockBroker acting as every broker and as
// the coordinator of group "g" for topic "t".
type mockKafka struct {
	b        *sarama.MockBroker
	handlers map[string]sarama.MockResponse
}

func newMockKafka(t *testing.T, committed int64) *mockKafka {
	t.Helper()
	b := sarama.NewMockBroker(t, 1)
	m := &mockKafka{b: b, handlers: map[string]sarama.MockResponse{
		"MetadataRequest": sarama.NewMockMetadataResponse(t).
			SetBroker(b.Addr(), b.BrokerID()).SetLeader("t", 0, b.BrokerID()),
		"FindCoordinatorRequest": sarama.NewMockFindCoordinatorResponse(t).
			SetCoordinator(sarama.CoordinatorGroup, "g", b),
		"OffsetCommitRequest": sarama.NewMockOffsetCommitResponse(t),
	}}
	m.setCommitted(t, map[int32]int64{0: committed})
	return m
}

// setCommitted makes OffsetFetch answer the offsets of t's partitions
// (-1: none committed).
func (m *mockKafka) setCommitted(t *testing.T, committed map[int32]int64) {
	r := sarama.NewMockOffsetFetchResponse(t).SetError(sarama.ErrNoError)
	for p, off := range committed {
		r.SetOffset("g", "t", p, off, "", sarama.ErrNoError)
	}
	m.set("OffsetFetchRequest", r)
}

// set answers requests of the kind with r (nil: never answer).
func (m *mockKafka) set(kind string, r sarama.MockResponse) {
	if r == nil {
		delete(m.handlers, kind)
	} else {
		m.handlers[kind] = r
	}
	m.b.SetHandlerByMap(m.handlers)
}

// commitRequests returns the OffsetCommit requests the broker answered,
// checking that each is a simple-group commit.
func (m *mockKafka) commitRequests(t *testing.T) []*sarama.OffsetCommitRequest {
	t.Helper()
	var out []*sarama.OffsetCommitRequest
	for _, rr := range m.b.History() {
		req, ok := rr.Request.(*sarama.OffsetCommitRequest)
		if !ok {
			continue
		}
		if req.ConsumerGroupGeneration != -1 || req.ConsumerID != "" || req.ConsumerGroup != "g" {
			t.Fatalf("commit as generation %d member %q group %q, want a simple-group commit (-1, \"\", g)",
				req.ConsumerGroupGeneration, req.ConsumerID, req.ConsumerGroup)
		}
		out = append(out, req)
	}
	return out
}

// fetchRequests counts the OffsetFetch requests the broker answered.
func (m *mockKafka) fetchRequests() int {
	n := 0
	for _, rr := range m.b.History() {
		if _, ok := rr.Request.(*sarama.OffsetFetchRequest); ok {
			n++
		}
	}
	return n
}

// commits returns the offsets of partition t/0 in the OffsetCommit
// requests the broker answered.
func (m *mockKafka) commits(t *testing.T) []int64 {
	t.Helper()
	var out []int64
	for _, req := range m.commitRequests(t) {
		off, _, err := req.Offset("t", 0)
		if err != nil {
			continue
		}
		out = append(out, off)
	}
	return out
}

// blocks returns how many partitions of t, among 0..n-1, req carries.
func blocks(req *sarama.OffsetCommitRequest, n int32) int {
	c := 0
	for p := range n {
		if _, _, err := req.Offset("t", p); err == nil {
			c++
		}
	}
	return c
}

func mockConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0
	cfg.Consumer.Offsets.Retry.Max = 2
	cfg.Metadata.Retry.Max = 1
	cfg.Metadata.Retry.Backoff = 10 * time.Millisecond
	cfg.ApiVersionsRequest = false
	cfg.Net.ReadTimeout = time.Minute // a hung broker hangs sarama for long
	return cfg
}

// fastRetries is the default config with short backoffs.
func fastRetries() KafkaConfig {
	kc := NewKafkaConfig()
	kc.RetryBackoff, kc.RetryBackoffMax = 5*time.Millisecond, 20*time.Millisecond
	return kc
}

func newMockStore(t *testing.T, m *mockKafka, sc *sarama.Config, kc KafkaConfig) (*KafkaStore, sarama.Client) {
	t.Helper()
	client, err := sarama.NewClient([]string{m.b.Addr()}, sc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewKafkaStore(client, "g", kc, testLogger(t))
	if err != nil {
		client.Close()
		t.Fatal(err)
	}
	return s, client
}

func TestNewKafkaStoreRejects(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockKafka(t, -1)
	defer m.b.Close()
	client, err := sarama.NewClient([]string{m.b.Addr()}, mockConfig())
	if err != nil {
		t.Fatal(err)
	}
	bad := NewKafkaConfig()
	bad.CloseTimeout = 0
	if _, err := NewKafkaStore(client, "g", bad, nil); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "KafkaConfig.CloseTimeout") {
		t.Fatalf("bad config: %v", err)
	}
	if _, err := NewKafkaStore(nil, "g", NewKafkaConfig(), nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("nil client: %v", err)
	}
	if _, err := NewKafkaStore(client, "", NewKafkaConfig(), nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("empty group: %v", err)
	}
	client.Close()
	if _, err := NewKafkaStore(client, "g", NewKafkaConfig(), nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("closed client: %v", err)
	}
}

func TestKafkaStoreMockCommit(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockKafka(t, 5)
	defer m.b.Close()
	s, client := newMockStore(t, m, mockConfig(), fastRetries())
	defer client.Close()
	ctx := context.Background()

	if next, ok, err := s.Fetch(ctx, "t", 0); err != nil || !ok || next != 5 {
		t.Fatalf("fetch = %d %v %v", next, ok, err)
	}
	// The coordinator answers 5: a commit of 5 verifies. It is sent even
	// though it equals what the coordinator holds.
	if err := s.Commit(ctx, "t", 0, 5); err != nil {
		t.Fatal(err)
	}
	if got := m.commits(t); len(got) != 1 || got[0] != 5 {
		t.Fatalf("commits sent = %v, want [5]", got)
	}
	if n := m.fetchRequests(); n != 2 {
		t.Fatalf("%d offset fetches, want 2 (the Fetch and the commit's read-back)", n)
	}
	// Below what this instance committed: nothing is sent.
	if err := s.Commit(ctx, "t", 0, 3); err != nil {
		t.Fatal(err)
	}
	if got := m.commits(t); len(got) != 1 {
		t.Fatalf("commits sent = %v, want no new one", got)
	}
	// Reset may go below; the coordinator now answers 2.
	m.setCommitted(t, map[int32]int64{0: 2})
	if err := s.Reset(ctx, "t", 0, 2); err != nil {
		t.Fatal(err)
	}
	if got := m.commits(t); len(got) != 2 || got[1] != 2 {
		t.Fatalf("commits sent = %v, want [5 2]", got)
	}
	// The coordinator acknowledges 8 but keeps answering 2: the commit is
	// read back, written once more, read back again, and fails.
	fetches := m.fetchRequests()
	err := s.Commit(ctx, "t", 0, 8)
	if !errors.Is(err, ErrCommit) {
		t.Fatalf("commit with a lying coordinator: %v", err)
	}
	for _, want := range []string{`"t"/0`, "offset 8", "coordinator has offset 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := m.commits(t); len(got) != 4 || got[2] != 8 || got[3] != 8 {
		t.Fatalf("commits sent = %v, want two of 8 after [5 2]", got)
	}
	if n := m.fetchRequests() - fetches; n != 2 {
		t.Fatalf("%d read-backs, want 2", n)
	}
	if st := s.Stats(); st.Recommitted != 1 || st.Failed != 1 {
		t.Fatalf("stats %+v, want 1 recommitted and 1 failed", st)
	}
	// The failed 8 is not a floor: 4 is still written.
	m.setCommitted(t, map[int32]int64{0: 4})
	if err := s.Commit(ctx, "t", 0, 4); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "t", 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "t", 0); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := s.Commit(ctx, "t", 0, 9); !errors.Is(err, ErrClosed) {
		t.Fatalf("commit after close: %v", err)
	}
	if _, _, err := s.Fetch(ctx, "t", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("fetch after close: %v", err)
	}
	if err := s.Release(ctx, "t", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("release after close: %v", err)
	}
	for _, err := range s.CommitBatch(ctx, []Offset{{TopicPartition: TopicPartition{"t", 0}, Next: 10}}) {
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("batch after close: %v", err)
		}
	}
}

// A partition the coordinator refuses for good fails at once: no retry,
// no read-back.
func TestKafkaStoreMockCommitRefused(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockKafka(t, -1)
	defer m.b.Close()
	m.set("OffsetCommitRequest", sarama.NewMockOffsetCommitResponse(t).SetError("g", "t", 0, sarama.ErrOffsetMetadataTooLarge))
	s, client := newMockStore(t, m, mockConfig(), fastRetries())
	defer client.Close()
	defer s.Close()
	err := s.Commit(context.Background(), "t", 0, 7)
	if !errors.Is(err, ErrCommit) || !errors.Is(err, sarama.ErrOffsetMetadataTooLarge) {
		t.Fatalf("commit = %v, want ErrCommit wrapping the broker's error", err)
	}
	var pe *PartitionError
	if !errors.As(err, &pe) || pe.Op != "commit" || pe.Topic != "t" || pe.Partition != 0 {
		t.Fatalf("not a PartitionError for commit t/0: %#v", err)
	}
	if n, f := len(m.commitRequests(t)), m.fetchRequests(); n != 1 || f != 0 {
		t.Fatalf("%d commits and %d fetches, want 1 and 0", n, f)
	}
	// The broker is fine again: the next commit succeeds.
	m.set("OffsetCommitRequest", sarama.NewMockOffsetCommitResponse(t))
	m.setCommitted(t, map[int32]int64{0: 7})
	if err := s.Commit(context.Background(), "t", 0, 7); err != nil {
		t.Fatal(err)
	}
}

// batchOf returns entries for partitions 0..n-1 of t, at offset base+p.
func batchOf(n int32, base int64) []Offset {
	b := make([]Offset, n)
	for p := range n {
		b[p] = Offset{TopicPartition: TopicPartition{"t", p}, Next: base + int64(p)}
	}
	return b
}

// TestKafkaStoreMockBatchOneRequest: a batch of many partitions is one
// OffsetCommit request and nothing is read back; one partition the
// coordinator refuses fails alone.
func TestKafkaStoreMockBatchOneRequest(t *testing.T) {
	verifyNoLeaks(t)
	const n = 50
	m := newMockKafka(t, -1)
	defer m.b.Close()
	s, client := newMockStore(t, m, mockConfig(), fastRetries())
	defer client.Close()
	defer s.Close()
	ctx := context.Background()
	for i, err := range s.CommitBatch(ctx, batchOf(n, 100)) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	reqs := m.commitRequests(t)
	if len(reqs) != 1 || blocks(reqs[0], n) != n {
		t.Fatalf("%d commit requests, want 1 with all %d partitions", len(reqs), n)
	}
	if off, _, _ := reqs[0].Offset("t", 17); off != 117 {
		t.Fatalf("partition 17 committed at %d, want 117", off)
	}
	if f := m.fetchRequests(); f != 0 {
		t.Fatalf("%d offset fetches after a routine batch, want none", f)
	}
	if st := s.Stats(); st.CommitRequests != 1 || st.FetchRequests != 0 || st.Committed != n || st.Rounds != 1 {
		t.Fatalf("stats %+v, want 1 round, 1 commit request, 0 fetches, %d committed", st, n)
	}

	m.set("OffsetCommitRequest", sarama.NewMockOffsetCommitResponse(t).SetError("g", "t", 7, sarama.ErrOffsetMetadataTooLarge))
	errs := s.CommitBatch(ctx, batchOf(n, 200))
	for i, err := range errs {
		if i == 7 {
			var pe *PartitionError
			if !errors.Is(err, ErrCommit) || !errors.Is(err, sarama.ErrOffsetMetadataTooLarge) || !errors.As(err, &pe) || pe.Partition != 7 {
				t.Fatalf("entry 7: %v, want ErrCommit wrapping the broker's error for partition 7", err)
			}
			if !strings.Contains(err.Error(), "offset 207") {
				t.Errorf("entry 7: %q does not name offset 207", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("entry %d failed with partition 7: %v", i, err)
		}
	}
	if reqs := m.commitRequests(t); len(reqs) != 2 || blocks(reqs[1], n) != n {
		t.Fatalf("%d commit requests, want a second with all %d partitions", len(reqs), n)
	}
	// Entries below the floor are skipped, bad ones fail alone.
	b := append(batchOf(3, 0), Offset{TopicPartition: TopicPartition{"t", 1}, Next: 500}, Offset{TopicPartition: TopicPartition{"", 9}, Next: 1})
	errs = s.CommitBatch(ctx, b)
	if errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("entries below the floor: %v", errs[:3])
	}
	if !errors.Is(errs[3], ErrConfig) || !errors.Is(errs[4], ErrConfig) {
		t.Fatalf("repeated and bad entries: %v, %v; want ErrConfig", errs[3], errs[4])
	}
	if reqs := m.commitRequests(t); len(reqs) != 2 {
		t.Fatalf("a batch of skipped entries sent a request")
	}
}

// TestKafkaStoreMockRetriesCoordinatorErrors: the coordinator loading,
// then moved: retried (the coordinator looked up again) until it takes
// the commit.
func TestKafkaStoreMockRetriesCoordinatorErrors(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockKafka(t, -1)
	defer m.b.Close()
	errFor := func(kerr sarama.KError) *sarama.MockOffsetCommitResponse {
		r := sarama.NewMockOffsetCommitResponse(t)
		for p := range int32(3) {
			r.SetError("g", "t", p, kerr)
		}
		return r
	}
	m.set("OffsetCommitRequest", sarama.NewMockSequence(
		errFor(sarama.ErrOffsetsLoadInProgress), errFor(sarama.ErrNotCoordinatorForConsumer),
		errFor(sarama.ErrOffsetsLoadInProgress), errFor(sarama.ErrOffsetsLoadInProgress),
		errFor(sarama.ErrOffsetsLoadInProgress), sarama.NewMockOffsetCommitResponse(t)))
	s, client := newMockStore(t, m, mockConfig(), fastRetries()) // Consumer.Offsets.Retry.Max is 2
	defer client.Close()
	defer s.Close()
	for i, err := range s.CommitBatch(context.Background(), batchOf(3, 1)) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if reqs := m.commitRequests(t); len(reqs) != 6 || blocks(reqs[5], 3) != 3 {
		t.Fatalf("%d commit requests, want 6, the last with all 3 partitions", len(reqs))
	}
	finds := 0
	for _, rr := range m.b.History() {
		if _, ok := rr.Request.(*sarama.FindCoordinatorRequest); ok {
			finds++
		}
	}
	if finds < 2 {
		t.Fatalf("%d coordinator look-ups, want the coordinator looked up again after NotCoordinator", finds)
	}
}

// TestKafkaStoreMockUnsureFailureReadBack: a response that leaves a
// partition out is retried a limited number of times, then read back: the
// coordinator has the offset, so the commit succeeded.
func TestKafkaStoreMockUnsureFailureReadBack(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockKafka(t, -1)
	defer m.b.Close()
	partial := &sarama.OffsetCommitResponse{Version: 6}
	partial.AddError("t", 0, sarama.ErrNoError) // partition 1 missing
	m.set("OffsetCommitRequest", sarama.NewMockWrapper(partial))
	m.setCommitted(t, map[int32]int64{0: 10, 1: 11})
	s, client := newMockStore(t, m, mockConfig(), fastRetries())
	defer client.Close()
	defer s.Close()
	for i, err := range s.CommitBatch(context.Background(), batchOf(2, 10)) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	reqs := m.commitRequests(t)
	if len(reqs) != 3 || blocks(reqs[0], 2) != 2 || blocks(reqs[1], 2) != 1 || blocks(reqs[2], 2) != 1 {
		t.Fatalf("%d commit requests, want 3: both partitions, then partition 1 twice", len(reqs))
	}
	if f := m.fetchRequests(); f != 1 {
		t.Fatalf("%d read-backs, want 1", f)
	}
	// The coordinator does not have it: the read-back writes it once more
	// (again unanswered), reads again, and the entry fails.
	m.setCommitted(t, map[int32]int64{0: 20, 1: 11})
	errs := s.CommitBatch(context.Background(), batchOf(2, 20))
	if errs[0] != nil || !errors.Is(errs[1], ErrCommit) || !errors.Is(errs[1], sarama.ErrIncompleteResponse) ||
		!strings.Contains(errs[1].Error(), "coordinator has offset 11") {
		t.Fatalf("errors %v, want partition 1 alone to fail, incomplete, holding 11", errs)
	}
}

// TestKafkaStoreMockCoalesces: commits that arrive while a request is in
// flight go in the next request, all together.
func TestKafkaStoreMockCoalesces(t *testing.T) {
	verifyNoLeaks(t)
	const n = 20
	m := newMockKafka(t, -1)
	defer m.b.Close()
	kc := fastRetries()
	kc.Verify = false
	s, client := newMockStore(t, m, mockConfig(), kc)
	defer client.Close()
	defer s.Close()
	ctx := context.Background()
	if _, _, err := s.Fetch(ctx, "t", 0); err != nil { // finds the coordinator
		t.Fatal(err)
	}
	m.b.SetLatency(time.Second)
	errs := make(chan error, n+1)
	go func() { errs <- s.Commit(ctx, "t", 0, 1) }()
	testcluster.Await(t, 10*time.Second, time.Millisecond, "the first commit sent", func() bool { return s.Stats().CommitRequests == 1 })
	for p := int32(1); p <= n; p++ {
		go func() { errs <- s.Commit(ctx, "t", p, 1) }()
	}
	testcluster.Await(t, 10*time.Second, time.Millisecond, "the others queued", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.queue) == n
	})
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	reqs := m.commitRequests(t)
	if len(reqs) != 2 || blocks(reqs[0], n+1) != 1 || blocks(reqs[1], n+1) != n {
		t.Fatalf("%d commit requests, want 2: the first commit, then the %d others together", len(reqs), n)
	}
	if st := s.Stats(); st.Rounds != 3 { // the Fetch, then two
		t.Fatalf("%d rounds, want 3", st.Rounds)
	}
}

func TestKafkaStoreMockFetchBatch(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockKafka(t, -1)
	defer m.b.Close()
	m.setCommitted(t, map[int32]int64{0: 3, 1: -1, 2: 9})
	s, client := newMockStore(t, m, mockConfig(), fastRetries())
	defer client.Close()
	defer s.Close()
	var wg sync.WaitGroup
	for p, want := range map[int32]int64{0: 3, 1: -1, 2: 9} {
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				next, ok, err := s.Fetch(context.Background(), "t", p)
				if err != nil || ok != (want >= 0) || (ok && next != want) {
					t.Errorf("fetch %d = %d %v %v, want %d", p, next, ok, err, want)
				}
			}()
		}
	}
	wg.Wait()
	if st := s.Stats(); st.FetchRequests > st.Rounds || st.FetchRequests > 15 {
		t.Fatalf("stats %+v: more than one offset fetch per round", st)
	}
	// A group-level error fails every partition of the request.
	m.set("OffsetFetchRequest", sarama.NewMockOffsetFetchResponse(t).SetError(sarama.ErrGroupAuthorizationFailed))
	if _, _, err := s.Fetch(context.Background(), "t", 0); !errors.Is(err, ErrFetchOffset) || !errors.Is(err, sarama.ErrGroupAuthorizationFailed) {
		t.Fatalf("fetch refused for the group: %v", err)
	}
}

func TestKafkaStoreInvalidArgs(t *testing.T) {
	m := newMockKafka(t, -1)
	defer m.b.Close()
	s, client := newMockStore(t, m, mockConfig(), NewKafkaConfig())
	defer client.Close()
	defer s.Close()
	ctx := context.Background()
	if err := s.Commit(ctx, "", 0, 1); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, "t", -1, 1); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if err := s.Reset(ctx, "t", 0, -2); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "-2") {
		t.Fatal(err)
	}
	if _, _, err := s.Fetch(ctx, "", 0); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "t", -3); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if len(m.commits(t)) != 0 {
		t.Fatal("invalid calls reached the broker")
	}
}

// TestKafkaStoreMockHungCoordinator makes the coordinator swallow
// OffsetCommit requests (sarama would wait Net.ReadTimeout, a minute) and
// checks that a commit is cut at its deadline: it fails with
// ErrLeaseExpired, its connection is torn down (Stats.Fenced), the
// batcher is free at once for the next commit, and Release and Close
// return promptly without error.
func TestKafkaStoreMockHungCoordinator(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockKafka(t, 1)
	kc := fastRetries()
	kc.CommitTimeout = 300 * time.Millisecond
	kc.CloseTimeout = 300 * time.Millisecond
	s, client := newMockStore(t, m, mockConfig(), kc)
	defer client.Close()
	ctx := context.Background()
	if err := s.Commit(ctx, "t", 0, 1); err != nil {
		t.Fatal(err)
	}
	m.set("OffsetCommitRequest", nil) // no answer from now on

	bound := func(what string, start time.Time, limit time.Duration) {
		t.Helper()
		if d := time.Since(start); d > limit {
			t.Errorf("%s took %v, want at most %v", what, d, limit)
		}
	}
	const slack = 2 * time.Second // scheduling under -race on a busy machine
	start := time.Now()
	err := s.Commit(ctx, "t", 0, 2)
	bound("commit", start, kc.CommitTimeout+slack)
	// The caller's deadline and the link's tear-down are the same
	// instant: it may see either.
	if !errors.Is(err, ErrCommit) || !errors.Is(err, ErrLeaseExpired) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("commit to a hung coordinator: %v, want ErrLeaseExpired", err)
	}
	testcluster.Await(t, 5*time.Second, time.Millisecond, "the commit cut", func() bool { return s.Stats().Fenced == 1 })
	// The link was torn down: the batcher is free, and the next commit
	// goes out on a new connection and is cut at its own deadline.
	start = time.Now()
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = s.Commit(cctx, "t", 0, 3)
	cancel()
	bound("second commit", start, 100*time.Millisecond+slack)
	if !errors.Is(err, ErrLeaseExpired) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second commit: %v", err)
	}
	testcluster.Await(t, 5*time.Second, time.Millisecond, "the second commit cut", func() bool { return s.Stats().Fenced == 2 })
	start = time.Now()
	rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = s.Release(rctx, "t", 0)
	cancel()
	bound("release", start, 200*time.Millisecond+slack)
	if err != nil {
		t.Fatalf("release: %v", err)
	}
	start = time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	bound("close", start, kc.CloseTimeout+slack)
	select {
	case <-s.t.Dead():
	default:
		t.Fatal("the batcher still runs after Close")
	}
	m.b.Close()
}

// TestKafkaStoreMockFetchBesideWrites: a Fetch does not wait for the write
// round under way (a commit and its read-back, two round trips): it is
// answered before the commit returns. A Fetch of a partition that round
// writes waits for it, and is answered after the commit returns.
func TestKafkaStoreMockFetchBesideWrites(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockKafka(t, -1)
	defer m.b.Close()
	m.setCommitted(t, map[int32]int64{0: 7, 1: 3})
	s, client := newMockStore(t, m, mockConfig(), fastRetries()) // Verify: read back
	defer client.Close()
	defer s.Close()
	ctx := context.Background()
	if _, _, err := s.Fetch(ctx, "t", 1); err != nil { // finds the coordinator
		t.Fatal(err)
	}
	for _, p := range []int32{1, 0} { // another partition's Fetch, then the written one's
		// Long enough that the Fetch is sent before the commit is answered,
		// also on a busy machine.
		m.b.SetLatency(2 * time.Second)
		sent := s.Stats().CommitRequests
		var order []string
		var mu sync.Mutex
		note := func(what string) {
			mu.Lock()
			order = append(order, what)
			mu.Unlock()
		}
		done := make(chan error, 2)
		go func() {
			err := s.Commit(ctx, "t", 0, 7)
			note("commit")
			done <- err
		}()
		testcluster.Await(t, 10*time.Second, time.Millisecond, "the commit sent", func() bool { return s.Stats().CommitRequests > sent })
		go func() {
			next, ok, err := s.Fetch(ctx, "t", p)
			if err == nil && (!ok || next != map[int32]int64{0: 7, 1: 3}[p]) {
				err = fmt.Errorf("fetch of partition %d: %d %v", p, next, ok)
			}
			note("fetch")
			done <- err
		}()
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"fetch", "commit"}
		if p == 0 {
			want = []string{"commit", "fetch"}
		}
		if !slices.Equal(order, want) {
			t.Errorf("fetch of partition %d while partition 0 is committed: answered in the order %v, want %v", p, order, want)
		}
		m.b.SetLatency(0)
	}
}

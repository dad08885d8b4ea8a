package offsets

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }

// testLogger logs through t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

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
	} {
		c := NewKafkaConfig()
		tc.change(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Validate() = %v, want ErrInvalid naming %s", err, tc.field)
		}
	}
}

// mockKafka is a single sarama MockBroker acting as every broker and as
// the coordinator of group "g" for topic "t" (one partition).
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
		"OffsetCommitRequest": sarama.NewMockOffsetCommitResponse(t).SetError("g", "t", 0, sarama.ErrNoError),
	}}
	m.setCommitted(t, committed)
	return m
}

// setCommitted makes OffsetFetch answer committed.
func (m *mockKafka) setCommitted(t *testing.T, committed int64) {
	m.handlers["OffsetFetchRequest"] = sarama.NewMockOffsetFetchResponse(t).
		SetOffset("g", "t", 0, committed, "", sarama.ErrNoError).SetError(sarama.ErrNoError)
	m.b.SetHandlerByMap(m.handlers)
}

// commits returns the offsets of partition t/0 in the OffsetCommit requests
// the broker received, checking that each is a simple-group commit.
func (m *mockKafka) commits(t *testing.T) []int64 {
	t.Helper()
	var out []int64
	for _, rr := range m.b.History() {
		req, ok := rr.Request.(*sarama.OffsetCommitRequest)
		if !ok {
			continue
		}
		if req.ConsumerGroupGeneration != -1 || req.ConsumerID != "" || req.ConsumerGroup != "g" {
			t.Fatalf("commit as generation %d member %q group %q, want a simple-group commit (-1, \"\", g)",
				req.ConsumerGroupGeneration, req.ConsumerID, req.ConsumerGroup)
		}
		off, _, err := req.Offset("t", 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, off)
	}
	return out
}

func mockConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Offsets.Retry.Max = 2
	cfg.Metadata.Retry.Max = 1
	cfg.Metadata.Retry.Backoff = 10 * time.Millisecond
	cfg.ApiVersionsRequest = false
	cfg.Net.ReadTimeout = time.Minute // a hung broker hangs sarama for long
	return cfg
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
	m := newMockKafka(t, -1)
	defer m.b.Close()
	for _, tc := range []struct {
		name  string
		sc    func(*sarama.Config)
		kc    func(*KafkaConfig)
		field string
	}{
		{"auto-commit", func(c *sarama.Config) { c.Consumer.Offsets.AutoCommit.Enable = true }, nil, "Consumer.Offsets.AutoCommit.Enable"},
		{"no verify without errors", nil, func(c *KafkaConfig) { c.Verify = false }, "Consumer.Return.Errors"},
		{"unbuffered errors", func(c *sarama.Config) { c.Consumer.Return.Errors = true; c.ChannelBufferSize = 0 }, nil, "ChannelBufferSize"},
		{"bad config", nil, func(c *KafkaConfig) { c.CloseTimeout = 0 }, "KafkaConfig.CloseTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, kc := mockConfig(), NewKafkaConfig()
			if tc.sc != nil {
				tc.sc(sc)
			}
			if tc.kc != nil {
				tc.kc(&kc)
			}
			client, err := sarama.NewClient([]string{m.b.Addr()}, sc)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			_, err = NewKafkaStore(client, "g", kc, nil)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("NewKafkaStore = %v, want ErrInvalid naming %s", err, tc.field)
			}
		})
	}
	if _, err := NewKafkaStore(nil, "g", NewKafkaConfig(), nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nil client: %v", err)
	}
	client, err := sarama.NewClient([]string{m.b.Addr()}, mockConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewKafkaStore(client, "", NewKafkaConfig(), nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty group: %v", err)
	}
	client.Close()
	if _, err := NewKafkaStore(client, "g", NewKafkaConfig(), nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("closed client: %v", err)
	}
}

func TestKafkaStoreMockCommit(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockKafka(t, 5)
	defer m.b.Close()
	s, client := newMockStore(t, m, mockConfig(), NewKafkaConfig())
	defer client.Close()
	ctx := context.Background()

	if next, ok, err := s.Fetch(ctx, "t", 0); err != nil || !ok || next != 5 {
		t.Fatalf("fetch = %d %v %v", next, ok, err)
	}
	// The coordinator answers 5: a commit of 5 verifies. It is sent even
	// though the POM loaded 5 when it started managing the partition.
	if err := s.Commit(ctx, "t", 0, 5); err != nil {
		t.Fatal(err)
	}
	if got := m.commits(t); len(got) != 1 || got[0] != 5 {
		t.Fatalf("commits sent = %v, want [5]", got)
	}
	// Below what this instance committed: nothing is sent.
	if err := s.Commit(ctx, "t", 0, 3); err != nil {
		t.Fatal(err)
	}
	if got := m.commits(t); len(got) != 1 {
		t.Fatalf("commits sent = %v, want no new one", got)
	}
	// Reset may go below; the coordinator now answers 2.
	m.setCommitted(t, 2)
	if err := s.Reset(ctx, "t", 0, 2); err != nil {
		t.Fatal(err)
	}
	if got := m.commits(t); len(got) != 2 || got[1] != 2 {
		t.Fatalf("commits sent = %v, want [5 2]", got)
	}
	// The coordinator does not take 8 (it keeps answering 2): verification
	// fails after Consumer.Offsets.Retry.Max+1 attempts.
	err := s.Commit(ctx, "t", 0, 8)
	if !errors.Is(err, ErrCommit) {
		t.Fatalf("commit with a lying coordinator: %v", err)
	}
	for _, want := range []string{`"t"/0`, "offset 8", "coordinator has offset 2", "after 3 attempts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := m.commits(t); len(got) != 5 || got[2] != 8 || got[4] != 8 {
		t.Fatalf("commits sent = %v, want 3 attempts of 8", got)
	}
	// The failed 8 is not a floor: 4 is still written.
	m.setCommitted(t, 4)
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
}

// With Verify off, the errors sarama reports on the POM's error channel
// fail the commit.
func TestKafkaStoreMockCommitErrorReported(t *testing.T) {
	m := newMockKafka(t, -1)
	defer m.b.Close()
	m.handlers["OffsetCommitRequest"] = sarama.NewMockOffsetCommitResponse(t).SetError("g", "t", 0, sarama.ErrOffsetMetadataTooLarge)
	m.b.SetHandlerByMap(m.handlers)
	sc := mockConfig()
	sc.Consumer.Return.Errors = true
	kc := NewKafkaConfig()
	kc.Verify = false
	s, client := newMockStore(t, m, sc, kc)
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
	// The broker is fine again: the next commit succeeds.
	m.handlers["OffsetCommitRequest"] = sarama.NewMockOffsetCommitResponse(t).SetError("g", "t", 0, sarama.ErrNoError)
	m.b.SetHandlerByMap(m.handlers)
	if err := s.Commit(context.Background(), "t", 0, 7); err != nil {
		t.Fatal(err)
	}
}

func TestKafkaStoreInvalidArgs(t *testing.T) {
	m := newMockKafka(t, -1)
	defer m.b.Close()
	s, client := newMockStore(t, m, mockConfig(), NewKafkaConfig())
	defer client.Close()
	defer s.Close()
	ctx := context.Background()
	if err := s.Commit(ctx, "", 0, 1); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, "t", -1, 1); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
	if err := s.Reset(ctx, "t", 0, -2); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "-2") {
		t.Fatal(err)
	}
	if _, _, err := s.Fetch(ctx, "", 0); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "t", -3); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
	if len(m.commits(t)) != 0 {
		t.Fatal("invalid calls reached the broker")
	}
}

// TestKafkaStoreMockHungCoordinator makes the coordinator swallow
// OffsetCommit requests (sarama then waits Net.ReadTimeout, a minute) and
// checks that Commit, Release and Close return in bounded time, and that
// the abandoned goroutine closes the partition once sarama returns.
func TestKafkaStoreMockHungCoordinator(t *testing.T) {
	verifyNoLeaks(t)
	m := newMockKafka(t, 1)
	kc := NewKafkaConfig()
	kc.CommitTimeout = 300 * time.Millisecond
	kc.CloseTimeout = 300 * time.Millisecond
	s, client := newMockStore(t, m, mockConfig(), kc)
	ctx := context.Background()
	if err := s.Commit(ctx, "t", 0, 1); err != nil {
		t.Fatal(err)
	}
	delete(m.handlers, "OffsetCommitRequest") // no answer from now on
	m.b.SetHandlerByMap(m.handlers)

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
	if !errors.Is(err, ErrCommit) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("commit to a hung coordinator: %v", err)
	}
	// The partition is still busy in sarama: a second commit waits for it
	// and gives up at its own deadline.
	start = time.Now()
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = s.Commit(cctx, "t", 0, 3)
	cancel()
	bound("second commit", start, 100*time.Millisecond+slack)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second commit: %v", err)
	}
	s.mu.Lock()
	p := s.parts[TopicPartition{"t", 0}]
	s.mu.Unlock()
	start = time.Now()
	rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = s.Release(rctx, "t", 0)
	cancel()
	bound("release", start, 200*time.Millisecond+slack)
	if !errors.Is(err, ErrRelease) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("release: %v", err)
	}
	if isDone(p.closed) {
		t.Fatal("partition closed while sarama still uses it")
	}
	start = time.Now()
	err = s.Close()
	bound("close", start, kc.CloseTimeout+slack)
	if !errors.Is(err, ErrRelease) || !strings.Contains(err.Error(), "1 sarama calls still running") {
		t.Fatalf("close with a hung call: %v", err)
	}
	if s.Close() != err {
		t.Fatal("second Close returned a different result")
	}

	// Closing the broker breaks sarama's connection: the abandoned call
	// returns, and its goroutine closes the released partition and exits.
	m.b.Close()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.calls.wait(wctx); err != nil {
		t.Fatalf("abandoned call did not return after the broker closed: %v", err)
	}
	if !isDone(p.closed) {
		t.Fatal("released partition not closed by the abandoned call")
	}
	client.Close()
}

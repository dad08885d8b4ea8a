package admin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
)

type fakeSource struct {
	mu sync.Mutex
	st manager.Stats
}

func (f *fakeSource) Stats() manager.Stats { f.mu.Lock(); defer f.mu.Unlock(); return f.st }

func (f *fakeSource) update(fn func(*manager.Stats)) { f.mu.Lock(); fn(&f.st); f.mu.Unlock() }

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func stats() manager.Stats {
	return manager.Stats{Group: "g", Instance: "i1", Members: []string{"i1", "i2"}, SessionID: 0xabc,
		Assigned: []manager.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}},
		Partitions: []manager.PartitionStats{
			{Topic: "t", Partition: 0, Generation: 7, Committed: 10, HighWatermark: 15, Lag: 5, Delivered: 12, Acks: 11, Acked: 11,
				Unacked: 1, OldestUnackedAge: 2 * time.Second, CommitErrors: 3, FetchErrors: 4, Resets: 1},
			{Topic: "t", Partition: 1, Generation: 8, Committed: -1, HighWatermark: -1, Lag: -1},
		},
		Ready: true, SessionHealthy: true, Rebalances: 3, ClaimWaits: 2,
		RebalancesByCause: map[manager.RebalanceCause]uint64{manager.CauseStart: 1, manager.CauseMembership: 2},
		History: []manager.Rebalance{
			{Seq: 1, Took: 300 * time.Millisecond, Causes: []manager.RebalanceCause{manager.CauseStart}, Added: 4},
			{Seq: 2, Took: 1500 * time.Millisecond, Causes: []manager.RebalanceCause{manager.CauseMembership}, Added: 0, Revoked: 2},
		},
		Delivered: 40, Acked: 39}
}

// TestHealthReady: liveness does not depend on the ZooKeeper session;
// readiness does, and says why.
func TestHealthReady(t *testing.T) {
	live := NewLiveness(time.Minute)
	s := New(Config{Group: "g", Version: "v1", Liveness: live})
	h := s.Handler()
	if code, body := get(t, h, "/healthz"); code != 200 || !strings.Contains(body, "joining") {
		t.Fatalf("healthz before join: %d %q", code, body)
	}
	if code, body := get(t, h, "/readyz"); code != 503 || !strings.Contains(body, "joining") {
		t.Fatalf("readyz before join: %d %q", code, body)
	}
	// Waiting for ZooKeeper at start: alive, not ready, and why.
	s.SetWaiting("waiting for zookeeper (attempt 2): no session")
	if code, body := get(t, h, "/healthz"); code != 200 || !strings.Contains(body, "waiting for zookeeper (attempt 2)") {
		t.Fatalf("healthz while waiting: %d %q", code, body)
	}
	if code, body := get(t, h, "/readyz"); code != 503 || body != "waiting for zookeeper (attempt 2): no session\n" {
		t.Fatalf("readyz while waiting: %d %q", code, body)
	}
	s.SetWaiting("")
	if code, body := get(t, h, "/readyz"); code != 503 || !strings.Contains(body, "joining") {
		t.Fatalf("readyz after the wait: %d %q", code, body)
	}
	s.SetWaiting("still waiting")
	src := &fakeSource{st: stats()}
	s.SetSource(src)
	if code, _ := get(t, h, "/healthz"); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	if code, body := get(t, h, "/readyz"); code != 200 || !strings.Contains(body, "2 partitions") {
		t.Fatalf("readyz: %d %q", code, body)
	}
	src.update(func(st *manager.Stats) { st.SessionHealthy, st.Ready = false, false })
	if code, body := get(t, h, "/healthz"); code != 200 {
		t.Fatalf("healthz with an unhealthy session: %d %q", code, body)
	}
	if code, body := get(t, h, "/readyz"); code != 503 || !strings.Contains(body, "zookeeper session unhealthy") {
		t.Fatalf("readyz with an unhealthy session: %d %q", code, body)
	}
	// A stalled loop fails liveness.
	now := time.Now()
	live.now = func() time.Time { return now }
	live.Beat("manager")
	live.now = func() time.Time { return now.Add(2 * time.Minute) }
	if code, body := get(t, h, "/healthz"); code != 503 || !strings.Contains(body, "manager loop silent for 2m0s") {
		t.Fatalf("healthz with a stalled loop: %d %q", code, body)
	}
}

func TestStatus(t *testing.T) {
	s := New(Config{Group: "g", Version: "v1", SinkStats: func() sink.Stats { return sink.Stats{Delivered: 4} }})
	s.SetSource(&fakeSource{st: stats()})
	code, body := get(t, s.Handler(), "/status")
	var st Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != 200 {
		t.Fatalf("%d %v %s", code, err, body)
	}
	if st.Instance != "i1" || len(st.Members) != 2 || len(st.Assignment) != 2 || st.Partitions[0].Lag != 5 ||
		st.Partitions[1].Committed != -1 || st.Sink.Delivered != 4 || st.LastRebalanceDuration != "1.5s" ||
		!st.Ready || st.Readiness != "ready: 2 partitions fetching" || !st.Alive || st.SessionID != "0xabc" ||
		st.Partitions[0].OldestUnackedAge != 2 || st.Partitions[0].CommitErrors != 3 {
		t.Fatalf("status %+v", st)
	}
	if len(st.RecentRebalances) != 2 || st.RecentRebalances[0].Seq != 2 || st.RecentRebalances[0].Causes[0] != "membership" ||
		st.RebalancesByCause["start"] != 1 || len(st.LagHistory) != 1 || st.LagHistory[0].Lag != 5 {
		t.Fatalf("status rebalances/lag %+v", st)
	}
	if st.GroupView != nil {
		t.Fatalf("group view without a viewer: %+v", st.GroupView)
	}
}

func TestListen(t *testing.T) {
	s := New(Config{Group: "g", IdleTimeout: time.Second})
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if code := getStatus(t, http.DefaultClient, "http://"+addr.String()+"/readyz"); code != 503 {
		t.Fatalf("status %d", code)
	}
	if s.srv.IdleTimeout != time.Second || s.srv.ReadHeaderTimeout == 0 {
		t.Errorf("timeouts: idle %v, read header %v", s.srv.IdleTimeout, s.srv.ReadHeaderTimeout)
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
}

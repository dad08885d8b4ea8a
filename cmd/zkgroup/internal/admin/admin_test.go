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
	"github.com/zkgroup/zkgroup/internal/partition"
)

type fakeSource struct {
	mu sync.Mutex
	st manager.Stats
}

func (f *fakeSource) Stats() manager.Stats { f.mu.Lock(); defer f.mu.Unlock(); return f.st }

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func stats() manager.Stats {
	return manager.Stats{Group: "g", Instance: "i1", Members: []string{"i1", "i2"},
		Assigned: []manager.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}},
		Partitions: []partition.Stats{
			{Topic: "t", Partition: 0, Committed: 10, HighWatermark: 15, Lag: 5, Delivered: 12, Acks: 11, Acked: 11},
			{Topic: "t", Partition: 1, Committed: -1, HighWatermark: -1, Lag: -1},
		},
		Ready: true, SessionHealthy: true, Rebalances: 3, LastRebalanceDuration: 1500 * time.Millisecond, ClaimWaits: 2,
		RebalancesByCause: map[manager.RebalanceCause]uint64{manager.CauseStart: 1, manager.CauseMembership: 2},
		History: []manager.Rebalance{
			{Seq: 1, Took: 300 * time.Millisecond, Causes: []manager.RebalanceCause{manager.CauseStart}},
			{Seq: 2, Took: 1500 * time.Millisecond, Causes: []manager.RebalanceCause{manager.CauseMembership}},
		},
		Delivered: 40, Acked: 39}
}

func TestHealthReady(t *testing.T) {
	s := New(Config{Group: "g", Version: "v1"})
	h := s.Handler()
	if code, body := get(t, h, "/healthz"); code != 503 || !strings.Contains(body, "joining") {
		t.Fatalf("before join: %d %q", code, body)
	}
	if code, _ := get(t, h, "/readyz"); code != 503 {
		t.Fatalf("readyz before join: %d", code)
	}
	src := &fakeSource{st: stats()}
	s.SetSource(src)
	if code, _ := get(t, h, "/healthz"); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	if code, body := get(t, h, "/readyz"); code != 200 || !strings.Contains(body, "2 partitions") {
		t.Fatalf("readyz: %d %q", code, body)
	}
	src.mu.Lock()
	src.st.SessionHealthy, src.st.Ready = false, false
	src.mu.Unlock()
	if code, body := get(t, h, "/healthz"); code != 503 || !strings.Contains(body, "session") {
		t.Fatalf("unhealthy: %d %q", code, body)
	}
	if code, _ := get(t, h, "/readyz"); code != 503 {
		t.Fatalf("not ready: %d", code)
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
		st.Partitions[1].Committed != -1 || st.Sink.Delivered != 4 || st.LastRebalanceDuration != "1.5s" {
		t.Fatalf("status %+v", st)
	}
}

func TestMetrics(t *testing.T) {
	s := New(Config{Group: "g", Version: "v1", SinkStats: func() sink.Stats { return sink.Stats{Delivered: 4, Errors: 2, Retries: 1} }})
	s.SetSource(&fakeSource{st: stats()})
	code, body := get(t, s.Handler(), "/metrics")
	if code != 200 {
		t.Fatal(code)
	}
	for _, want := range []string{
		`zkgroup_lag{group="g",partition="0",topic="t"} 5`,
		`zkgroup_committed_offset{group="g",partition="0",topic="t"} 10`,
		`zkgroup_high_watermark{group="g",partition="0",topic="t"} 15`,
		`zkgroup_messages_consumed_total{group="g",partition="0",topic="t"} 12`,
		`zkgroup_messages_acked_total{group="g",partition="0",topic="t"} 11`,
		`zkgroup_owned_partitions{group="g"} 2`,
		`zkgroup_consumer_messages_consumed_total{group="g"} 40`,
		`zkgroup_consumer_messages_acked_total{group="g"} 39`,
		`zkgroup_rebalances_total{cause="membership",group="g"} 2`,
		`zkgroup_rebalances_total{cause="start",group="g"} 1`,
		`zkgroup_rebalance_duration_seconds_count{group="g"} 2`,
		`zkgroup_rebalance_duration_seconds_bucket{group="g",le="0.5"} 1`,
		`zkgroup_last_rebalance_duration_seconds{group="g"} 1.5`,
		`zkgroup_claim_waits_total{group="g"} 2`,
		`zkgroup_session_healthy{group="g"} 1`,
		`zkgroup_sink_messages_total{group="g",outcome="delivered"} 4`,
		`zkgroup_sink_errors_total{group="g"} 2`,
		`zkgroup_sink_retries_total{group="g"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, `zkgroup_lag{group="g",partition="1"`) {
		t.Error("unknown lag exported")
	}
	// A second scrape observes no rebalance twice.
	if _, body := get(t, s.Handler(), "/metrics"); !strings.Contains(body, `zkgroup_rebalance_duration_seconds_count{group="g"} 2`) {
		t.Error("a second scrape observed the same rebalances again")
	}
}

func TestListen(t *testing.T) {
	s := New(Config{Group: "g"})
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
}

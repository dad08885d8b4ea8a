package admin

import (
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
)

func TestMetrics(t *testing.T) {
	s := New(Config{Group: "g", Version: "v1", SinkStats: func() sink.Stats { return sink.Stats{Delivered: 4, Errors: 2, Retries: 1} }})
	src := &fakeSource{st: stats()}
	s.SetSource(src)
	code, body := get(t, s.Handler(), "/metrics")
	if code != 200 {
		t.Fatal(code)
	}
	for _, want := range []string{
		`zkgroup_lag{group="g",partition="0",topic="t"} 5`,
		`zkgroup_consumergroup_lag{consumergroup="g",partition="0",topic="t"} 5`,
		`zkgroup_committed_offset{group="g",partition="0",topic="t"} 10`,
		`zkgroup_high_watermark{group="g",partition="0",topic="t"} 15`,
		`zkgroup_messages_consumed_total{group="g",partition="0",topic="t"} 12`,
		`zkgroup_messages_acked_total{group="g",partition="0",topic="t"} 11`,
		`zkgroup_oldest_unacked_age_seconds{group="g",partition="0",topic="t"} 2`,
		`zkgroup_partition_suspended{group="g",partition="0",topic="t"} 0`,
		`zkgroup_commit_errors_total{group="g",partition="0",topic="t"} 3`,
		`zkgroup_fetch_errors_total{group="g",partition="0",topic="t"} 4`,
		`zkgroup_offset_resets_total{group="g",partition="0",topic="t"} 1`,
		`zkgroup_suspended_partitions{group="g"} 0`,
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
	if strings.Contains(body, "zkgroup_subscription_topics") {
		t.Error("group view metrics without a group view")
	}
	// A second scrape observes no rebalance twice; a new ownership of
	// partition 0 (counters from zero again) adds to the error counters,
	// and a suspension shows.
	src.update(func(st *manager.Stats) {
		st.Partitions[0] = manager.PartitionStats{Topic: "t", Partition: 0, Generation: 9, Committed: 10, HighWatermark: 15, Lag: 5,
			CommitErrors: 2, Suspended: true}
	})
	_, body = get(t, s.Handler(), "/metrics")
	for _, want := range []string{
		`zkgroup_rebalance_duration_seconds_count{group="g"} 2`,
		`zkgroup_commit_errors_total{group="g",partition="0",topic="t"} 5`,
		`zkgroup_fetch_errors_total{group="g",partition="0",topic="t"} 4`,
		`zkgroup_partition_suspended{group="g",partition="0",topic="t"} 1`,
		`zkgroup_suspended_partitions{group="g"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("second scrape lacks %s", want)
		}
	}
	// A partition no longer owned keeps its error totals.
	src.update(func(st *manager.Stats) { st.Partitions = st.Partitions[1:] })
	if _, body = get(t, s.Handler(), "/metrics"); !strings.Contains(body, `zkgroup_commit_errors_total{group="g",partition="0",topic="t"} 5`) {
		t.Error("the error totals of a partition given up vanished")
	}
}

func TestPartitionTotals(t *testing.T) {
	pt := partitionTotals{}
	p := manager.PartitionStats{Topic: "t", Partition: 3, Generation: 1}
	for _, step := range []struct {
		gen, commit uint64
		want        uint64
	}{
		{1, 0, 0}, {1, 2, 2}, {1, 5, 5}, {1, 5, 5},
		{2, 1, 6}, // a new ownership counts from zero
		{2, 4, 9},
		{2, 0, 9}, // lower without a new generation: also a new ownership
		{2, 1, 10},
	} {
		p.Generation, p.CommitErrors = step.gen, step.commit
		if got := pt.observe(p)[commitErrors]; got != step.want {
			t.Fatalf("gen %d commit %d: total %d, want %d", step.gen, step.commit, got, step.want)
		}
	}
}

// TestGroupViewMetrics: the view's gauges while it is fresh.
func TestGroupViewMetrics(t *testing.T) {
	v := NewViewer(func() (GroupView, error) { return testView(), nil }, time.Minute, nil)
	if _, err := v.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Group: "g", View: v})
	_, body := get(t, s.Handler(), "/metrics")
	for _, want := range []string{
		`zkgroup_subscription_topics{group="g"} 1`,
		`zkgroup_subscription_partitions{group="g"} 3`,
		`zkgroup_unowned_partitions{group="g"} 1`,
		`zkgroup_joined{group="g"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

package manager

import (
	"testing"
	"time"

	metrics "github.com/rcrowley/go-metrics"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestKeptMetricsKeepsOnlyNamed: a kept name gets one real metric,
// registered once, a meter as a countMeter (counts, no rates, nothing
// for go-metrics' global ticker); every other name gets go-metrics' no-op
// of the type asked for, in both the lazy and the built form, and nothing
// else is registered.
func TestKeptMetricsKeepsOnlyNamed(t *testing.T) {
	r := newKeptMetrics(metricResponses)
	m := metrics.GetOrRegisterMeter(metricResponses, r)
	if _, ok := m.(*countMeter); !ok {
		t.Fatalf("kept meter is %T, want *countMeter", m)
	}
	m.Mark(3)
	if again := metrics.GetOrRegisterMeter(metricResponses, r); again != m {
		t.Fatal("a second GetOrRegister of a kept name returned another meter")
	}
	if got := responsesOf(r); got != 3 {
		t.Fatalf("responses %d, want 3", got)
	}
	snap := m.Snapshot()
	m.Mark(1)
	if snap.Count() != 3 || m.Count() != 4 || m.Rate1() != 0 || m.RateMean() != 0 {
		t.Fatalf("snapshot %d, count %d, rates %v %v; want 3, 4, 0 0", snap.Count(), m.Count(), m.Rate1(), m.RateMean())
	}
	// A kept meter registered built: a countMeter instead, the built one
	// stopped.
	k := newKeptMetrics(metricResponses)
	sm0 := metrics.NewMeter()
	if err := k.Register(metricResponses, sm0); err != nil {
		t.Fatal(err)
	}
	if _, ok := k.Get(metricResponses).(*countMeter); !ok {
		t.Fatalf("kept meter registered built is %T, want *countMeter", k.Get(metricResponses))
	}
	sm0.Mark(1)
	if sm0.Snapshot().Count() != 0 {
		t.Fatal("the built meter replaced was not stopped")
	}

	// sarama's forms: GetOrRegisterMeter/Counter pass go-metrics'
	// constructors, histograms a func returning one.
	if got := metrics.GetOrRegisterMeter("request-rate", r); got != (metrics.NilMeter{}) {
		t.Fatalf("meter %T, want NilMeter", got)
	}
	if got := metrics.GetOrRegisterCounter("requests-in-flight", r); got != (metrics.NilCounter{}) {
		t.Fatalf("counter %T, want NilCounter", got)
	}
	built := false
	h := r.GetOrRegister("request-latency-in-ms", func() metrics.Histogram {
		built = true
		return metrics.NewHistogram(metrics.NewExpDecaySample(1028, 0.015))
	})
	if _, ok := h.(metrics.NilHistogram); !ok || built {
		t.Fatalf("histogram %T (built %v), want NilHistogram, not built", h, built)
	}
	if got := metrics.GetOrRegisterGauge("g", r); got != (metrics.NilGauge{}) {
		t.Fatalf("gauge %T, want NilGauge", got)
	}
	if got := metrics.GetOrRegisterTimer("t", r); got != (metrics.NilTimer{}) {
		t.Fatalf("timer %T, want NilTimer", got)
	}
	// A metric built by the caller: the no-op of its type, and a meter is
	// stopped (go-metrics' ticker lets go of it).
	sm := metrics.NewMeter()
	if got := r.GetOrRegister("outgoing-byte-rate", sm); got != (metrics.NilMeter{}) {
		t.Fatalf("built meter: %T, want NilMeter", got)
	}
	sm.Mark(1)
	if sm.Snapshot().Count() != 0 { // a stopped StandardMeter ignores Mark
		t.Fatal("a meter built by the caller and dropped was not stopped")
	}
	if err := r.Register("response-size", metrics.NewHistogram(metrics.NilSample{})); err != nil {
		t.Fatal(err)
	}

	var names []string
	r.Each(func(name string, _ any) { names = append(names, name) })
	if len(names) != 1 || names[0] != metricResponses {
		t.Fatalf("registered %v, want only %q", names, metricResponses)
	}

	none := newKeptMetrics()
	if got := metrics.GetOrRegisterMeter(metricResponses, none); got != (metrics.NilMeter{}) {
		t.Fatalf("a registry keeping nothing gave %T", got)
	}
}

func responsesOf(r metrics.Registry) int64 {
	if m, ok := r.Get(metricResponses).(metrics.Meter); ok {
		return m.Count()
	}
	return -1
}

// TestMemberMetricsSeeResponses: a member's clients (the consumer's, the
// offsets client, the fetcher's connections) record Kafka's responses in
// the one meter that the reachability reads, and register nothing else.
func TestMemberMetricsSeeResponses(t *testing.T) {
	cons, topic := joinOne(t, 2, nil)
	reg := cons.client.Config().MetricRegistry
	if _, ok := reg.(*keptMetrics); !ok {
		t.Fatalf("the consumer's client registry is %T, want *keptMetrics", reg)
	}
	if cons.offsetClient.Config().MetricRegistry != reg {
		t.Fatal("the offsets client records its responses elsewhere")
	}
	grows := func(what string, f func() error) {
		t.Helper()
		before := responses(cons.client.Config())
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if after := responses(cons.client.Config()); after <= before {
			t.Fatalf("%s: responses %d -> %d, want growth", what, before, after)
		}
	}
	grows("consumer client metadata", func() error { return cons.client.RefreshMetadata(topic) })
	grows("offsets client metadata", func() error { return cons.offsetClient.RefreshMetadata(topic) })
	// The fetcher's loops long-poll the partitions once they are owned:
	// their responses count too, with no request of the test's.
	testcluster.Await(t, time.Minute, 10*time.Millisecond, "both partitions fetching", func() bool {
		st := cons.Stats()
		return st.Ready && len(st.Assigned) == 2
	})
	before := responses(cons.client.Config())
	testcluster.Await(t, 30*time.Second, 10*time.Millisecond, "fetch responses", func() bool {
		return responses(cons.client.Config()) > before+2
	})
	if ev := cons.kafka.evidence(); ev.brokers == 0 {
		t.Fatal("no evidence of Kafka's answers")
	}
	var names []string
	reg.Each(func(name string, _ any) { names = append(names, name) })
	if len(names) != 1 || names[0] != metricResponses {
		t.Fatalf("registered %v, want only %q", names, metricResponses)
	}
	if _, ok := reg.Get(metricResponses).(*countMeter); !ok {
		t.Fatalf("the responses meter is %T, want *countMeter (no go-metrics ticking)", reg.Get(metricResponses))
	}
}

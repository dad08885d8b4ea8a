package admin

import (
	"context"
	"github.com/zkgroup/zkgroup/manager"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/pipeline"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
)

// sinkBuckets span a local stdout write to a slow HTTP endpoint.
var sinkBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// SinkTimer times the sink: each attempt (Deliver) and each message from
// its first attempt to its outcome, retries and backoff included. Safe
// for concurrent use.
type SinkTimer struct {
	attempt *prometheus.HistogramVec
	message *prometheus.HistogramVec
}

// NewSinkTimer returns the histograms for group; register them with
// Config.SinkTimer.
func NewSinkTimer(group string) *SinkTimer {
	g := prometheus.Labels{"group": group}
	return &SinkTimer{
		attempt: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "zkgroup_sink_attempt_duration_seconds", ConstLabels: g, Buckets: sinkBuckets,
			Help: "One delivery attempt to the sink, by result (ok or error).",
		}, []string{"result"}),
		message: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "zkgroup_sink_message_duration_seconds", ConstLabels: g, Buckets: sinkBuckets,
			Help: "One message from its first sink attempt to its outcome (delivered, skipped, dead_lettered, failed), retries and backoff included.",
		}, []string{"outcome"}),
	}
}

// Describe is part of prometheus.Collector.
func (t *SinkTimer) Describe(ch chan<- *prometheus.Desc) {
	t.attempt.Describe(ch)
	t.message.Describe(ch)
}

// Collect is part of prometheus.Collector.
func (t *SinkTimer) Collect(ch chan<- prometheus.Metric) {
	t.attempt.Collect(ch)
	t.message.Collect(ch)
}

// WrapSink returns s timing each Deliver.
func (t *SinkTimer) WrapSink(s sink.Sink) sink.Sink { return timedSink{s, t} }

// WrapHandler returns h timing each Handle.
func (t *SinkTimer) WrapHandler(h pipeline.Handler) pipeline.Handler { return timedHandler{h, t} }

type timedSink struct {
	sink.Sink
	t *SinkTimer
}

// Deliver delivers through the wrapped sink and observes how long it took.
func (s timedSink) Deliver(ctx context.Context, m *manager.Message) error {
	start := time.Now()
	err := s.Sink.Deliver(ctx, m)
	result := "ok"
	if err != nil {
		result = "error"
	}
	s.t.attempt.WithLabelValues(result).Observe(time.Since(start).Seconds())
	return err
}

type timedHandler struct {
	h pipeline.Handler
	t *SinkTimer
}

// Handle handles through the wrapped handler and observes how long it took.
func (h timedHandler) Handle(ctx context.Context, m *manager.Message) (sink.Outcome, error) {
	start := time.Now()
	o, err := h.h.Handle(ctx, m)
	h.t.message.WithLabelValues(outcomeLabel(o, err)).Observe(time.Since(start).Seconds())
	return o, err
}

// outcomeLabel names an outcome like zkgroup_sink_messages_total does.
func outcomeLabel(o sink.Outcome, err error) string {
	switch {
	case err != nil:
		return "failed"
	case o == sink.Skipped:
		return "skipped"
	case o == sink.DeadLettered:
		return "dead_lettered"
	}
	return "delivered"
}

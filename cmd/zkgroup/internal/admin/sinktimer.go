package admin

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/pipeline"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
)

// sinkBuckets span a local stdout write to a slow HTTP endpoint.
var sinkBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// batchSizeBuckets span a batch of one to a full fetch of small messages.
var batchSizeBuckets = []float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000}

// batchBytesBuckets span a small message to a batch of several MB.
var batchBytesBuckets = []float64{256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20}

// SinkTimer times the sink: each attempt (Deliver, DeliverBatch), each
// message handled alone from its first attempt to its outcome, and each
// batch from its first attempt to its outcome, retries, backoff and the
// fallback to single messages included, with the batch's size. Safe for
// concurrent use.
type SinkTimer struct {
	attempt, message, batch *prometheus.HistogramVec
	batchSize, batchBytes   prometheus.Histogram
}

// NewSinkTimer returns the histograms for group and its sink (the
// config's sink.type, the batch histograms' sink label); register them
// with Config.SinkTimer.
func NewSinkTimer(group, sinkType string) *SinkTimer {
	g := prometheus.Labels{"group": group}
	gs := prometheus.Labels{"group": group, "sink": sinkType}
	opts := func(name string, labels prometheus.Labels, buckets []float64, help string) prometheus.HistogramOpts {
		return prometheus.HistogramOpts{Name: "zkgroup_sink_" + name, ConstLabels: labels, Buckets: buckets, Help: help}
	}
	return &SinkTimer{
		attempt: prometheus.NewHistogramVec(opts("attempt_duration_seconds", g, sinkBuckets,
			"One delivery attempt to the sink (of a message, or of a batch), by result (ok or error)."), []string{"result"}),
		message: prometheus.NewHistogramVec(opts("message_duration_seconds", g, sinkBuckets,
			"One message handled alone (by a sink that takes no batches) from its first sink attempt to its outcome (delivered, skipped, dead_lettered, failed), retries and backoff included."), []string{"outcome"}),
		batch: prometheus.NewHistogramVec(opts("batch_duration_seconds", gs, sinkBuckets,
			"One batch from its first sink attempt until every message of it was settled (ok) or one failed for good (failed), retries, backoff and the fallback to single messages included."), []string{"result"}),
		batchSize: prometheus.NewHistogram(opts("batch_messages", gs, batchSizeBuckets,
			"Messages per batch handed to the sink.")),
		batchBytes: prometheus.NewHistogram(opts("batch_bytes", gs, batchBytesBuckets,
			"Bytes (keys, values and headers) per batch handed to the sink.")),
	}
}

func (t *SinkTimer) collectors() []prometheus.Collector {
	return []prometheus.Collector{t.attempt, t.message, t.batch, t.batchSize, t.batchBytes}
}

// Describe is part of prometheus.Collector.
func (t *SinkTimer) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range t.collectors() {
		c.Describe(ch)
	}
}

// Collect is part of prometheus.Collector.
func (t *SinkTimer) Collect(ch chan<- prometheus.Metric) {
	for _, c := range t.collectors() {
		c.Collect(ch)
	}
}

// WrapSink returns s timing each Deliver and, when s is a
// sink.BatchSink, each DeliverBatch (the result is a BatchSink then too).
func (t *SinkTimer) WrapSink(s sink.Sink) sink.Sink {
	if bs, ok := s.(sink.BatchSink); ok {
		return timedBatchSink{timedSink{s, t}, bs}
	}
	return timedSink{s, t}
}

// WrapHandler returns h timing each Handle and each HandleBatch. The
// result is a pipeline.BatchHandler that takes batches when h does.
func (t *SinkTimer) WrapHandler(h pipeline.Handler) pipeline.BatchHandler { return timedHandler{h, t} }

type timedSink struct {
	sink.Sink
	t *SinkTimer
}

func (t *SinkTimer) observeAttempt(start time.Time, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	t.attempt.WithLabelValues(result).Observe(time.Since(start).Seconds())
}

// Deliver delivers through the wrapped sink and observes how long it took.
func (s timedSink) Deliver(ctx context.Context, m *manager.Message) error {
	start := time.Now()
	err := s.Sink.Deliver(ctx, m)
	s.t.observeAttempt(start, err)
	return err
}

type timedBatchSink struct {
	timedSink
	bs sink.BatchSink
}

// DeliverBatch delivers through the wrapped sink and observes how long it
// took.
func (s timedBatchSink) DeliverBatch(ctx context.Context, msgs []*manager.Message) error {
	start := time.Now()
	err := s.bs.DeliverBatch(ctx, msgs)
	s.t.observeAttempt(start, err)
	return err
}

// BatchLimits returns the wrapped sink's.
func (s timedBatchSink) BatchLimits() sink.BatchLimits { return s.bs.BatchLimits() }

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

// BatchLimits returns the wrapped handler's; false when it takes no
// batches.
func (h timedHandler) BatchLimits() (sink.BatchLimits, bool) {
	if bh, ok := h.h.(pipeline.BatchHandler); ok {
		return bh.BatchLimits()
	}
	return sink.BatchLimits{}, false
}

// HandleBatch handles through the wrapped handler (Handle for each
// message when it takes no batches) and observes the batch's size and how
// long it took.
func (h timedHandler) HandleBatch(ctx context.Context, msgs []*manager.Message) (int, error) {
	bh, ok := h.h.(pipeline.BatchHandler)
	if !ok {
		for i, m := range msgs {
			if _, err := h.Handle(ctx, m); err != nil {
				return i, err
			}
		}
		return len(msgs), nil
	}
	start := time.Now()
	n, err := bh.HandleBatch(ctx, msgs)
	result := "ok"
	if err != nil {
		result = "failed"
	}
	h.t.batch.WithLabelValues(result).Observe(time.Since(start).Seconds())
	size := 0
	for _, m := range msgs {
		size += sink.MessageSize(m)
	}
	h.t.batchSize.Observe(float64(len(msgs)))
	h.t.batchBytes.Observe(float64(size))
	return n, err
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

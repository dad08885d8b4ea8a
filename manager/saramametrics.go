package manager

import (
	"reflect"
	"sync/atomic"

	metrics "github.com/rcrowley/go-metrics"
)

// metricResponses is the sarama metric the member reads: the meter of the
// responses its clients' brokers answered, Kafka's answers as evidence
// of reachability (see responses).
const metricResponses = "response-rate"

// keptMetrics is the go-metrics registry of a member's sarama clients
// (the consumer's, the offsets client and the fetcher's connections). It
// registers only the metrics named in keep and gives sarama go-metrics'
// no-op metric (NilMeter, NilHistogram, ...) for every other one.
//
// Why: sarama registers, for every broker a client connects to, meters
// and histograms of its own and a "-for-broker-N" copy of each; a
// histogram holds a sample reservoir of 1,028 values. A member reads one
// of them, yet held all of them (about 0.36 MB per member on a
// 3-broker cluster), and every meter is ticked by go-metrics' global
// goroutine until it is unregistered. Safe for concurrent use.
type keptMetrics struct {
	metrics.Registry // the kept metrics
	keep             map[string]bool
}

// newKeptMetrics returns a registry of its own that keeps the metrics
// named (none: every metric is a no-op).
func newKeptMetrics(keep ...string) *keptMetrics {
	k := &keptMetrics{Registry: metrics.NewRegistry(), keep: map[string]bool{}}
	for _, n := range keep {
		k.keep[n] = true
	}
	return k
}

// GetOrRegister returns the metric of a kept name, registered on first
// use (a meter as a countMeter); for any other name, the no-op metric of
// the type that metric (a value, or a func returning it, as go-metrics
// takes) would have, without building it.
func (k *keptMetrics) GetOrRegister(name string, metric any) any {
	if !k.keep[name] {
		return nilMetric(metric)
	}
	if isMeter(metric) {
		stopBuilt(metric)
		return k.Registry.GetOrRegister(name, func() metrics.Meter { return &countMeter{} })
	}
	return k.Registry.GetOrRegister(name, metric)
}

// Register registers a kept metric (a meter as a countMeter) and drops
// any other one.
func (k *keptMetrics) Register(name string, metric any) error {
	if !k.keep[name] {
		return nil
	}
	if isMeter(metric) {
		stopBuilt(metric)
		return k.Registry.Register(name, &countMeter{})
	}
	return k.Registry.Register(name, metric)
}

// metricType returns metric's type, or, for go-metrics' lazy form (a func
// of no argument returning the metric), the type it returns and lazy.
func metricType(metric any) (t reflect.Type, lazy bool) {
	t = reflect.TypeOf(metric)
	if t != nil && t.Kind() == reflect.Func && t.NumIn() == 0 && t.NumOut() == 1 {
		return t.Out(0), true
	}
	return t, false
}

// isMetric reports whether a metric of type t is one of typ (an
// interface of go-metrics).
func isMetric(t, typ reflect.Type) bool {
	return t != nil && (t == typ || (t.Kind() != reflect.Interface && t.Implements(typ)))
}

// isMeter reports whether metric is a metrics.Meter, built or lazy.
func isMeter(metric any) bool {
	t, _ := metricType(metric)
	return isMetric(t, reflect.TypeFor[metrics.Meter]())
}

// stopBuilt stops a metric the caller built and that is not kept
// (go-metrics' ticker lets go of a stopped meter); a lazy one was never
// built.
func stopBuilt(metric any) {
	if s, ok := metric.(metrics.Stoppable); ok {
		s.Stop()
	}
}

// countMeter is a metrics.Meter that counts and keeps no rate (its rates
// are 0): the member reads the count alone, and go-metrics' own meter
// has its rates ticked by a global goroutine every 5 s for as long as it
// is registered, which woke an idle member's process for nothing.
type countMeter struct{ n atomic.Int64 }

func (m *countMeter) Count() int64    { return m.n.Load() }
func (m *countMeter) Mark(n int64)    { m.n.Add(n) }
func (*countMeter) Rate1() float64    { return 0 }
func (*countMeter) Rate5() float64    { return 0 }
func (*countMeter) Rate15() float64   { return 0 }
func (*countMeter) RateMean() float64 { return 0 }
func (*countMeter) Stop()             {}

// Snapshot returns a copy of the count.
func (m *countMeter) Snapshot() metrics.Meter {
	s := &countMeter{}
	s.n.Store(m.n.Load())
	return s
}

// nilMetric returns go-metrics' no-op metric of metric's type, metric
// being a metric or a func returning one (go-metrics' lazy form, which
// sarama uses: the metric is then never built). A metric built by the
// caller is stopped (go-metrics' ticker lets go of a stopped meter). A
// metric of no known type is returned as it is (a func is called).
func nilMetric(metric any) any {
	t, lazy := metricType(metric)
	if t == nil {
		return nil
	}
	for _, n := range nilMetrics {
		if isMetric(t, n.typ) {
			stopBuilt(metric)
			return n.nop
		}
	}
	if lazy {
		return reflect.ValueOf(metric).Call(nil)[0].Interface()
	}
	return metric
}

// nilMetrics maps each go-metrics metric interface to its no-op. No
// go-metrics type implements two of them.
var nilMetrics = []struct {
	typ reflect.Type
	nop any
}{
	{reflect.TypeFor[metrics.Timer](), metrics.NilTimer{}},
	{reflect.TypeFor[metrics.Histogram](), metrics.NilHistogram{}},
	{reflect.TypeFor[metrics.Meter](), metrics.NilMeter{}},
	{reflect.TypeFor[metrics.Counter](), metrics.NilCounter{}},
	{reflect.TypeFor[metrics.GaugeFloat64](), metrics.NilGaugeFloat64{}},
	{reflect.TypeFor[metrics.Gauge](), metrics.NilGauge{}},
	{reflect.TypeFor[metrics.EWMA](), metrics.NilEWMA{}},
}

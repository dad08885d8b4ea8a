package fetch

import "github.com/zkgroup/zkgroup/internal/saramawire"

// SetRequestHook makes f call h before each request (set it before the
// first Add).
func SetRequestHook(f *Fetcher, h func(broker int32, kind, fetched, named, forgotten int)) {
	f.onRequest = h
}

// Request kinds, for the hook.
const (
	KindSessionless = reqSessionless
	KindFull        = reqFull
	KindIncremental = reqIncremental
)

// WireOK reports whether sarama's FetchRequest lays out the fields the
// fetcher writes as expected.
func WireOK() bool { return saramawire.FetchOK }

// PrepMeterName is sarama's name of a topic's fetch meter.
var PrepMeterName = prepMeterName

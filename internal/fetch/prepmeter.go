package fetch

import (
	"strings"

	metrics "github.com/rcrowley/go-metrics"
)

// quietPrepMeter keeps sarama's sizing pass over a fetch request naming
// topic from starting go-metrics' global ticker.
//
// sarama (v1.61.1, FetchRequest.encode) marks the meter
// "consumer-fetch-rate-for-topic-T" of the encoder's registry for every
// topic of a fetch request. Its sizing pass (prepEncoder) has no
// registry, so go-metrics registers a StandardMeter of the topic in its
// DefaultRegistry, and the first one starts go-metrics' arbiter: a
// goroutine that wakes every 5 s for the life of the process, an idle
// member's only periodic wake besides its own, as no meter of the
// member's sarama clients is a StandardMeter (manager.keptMetrics). The
// real pass marks the client's registry's meter, as before. Registering
// go-metrics' no-op meter under the name first, where none is yet, makes
// DefaultRegistry's meter of the topic (which counted sizing passes, not
// fetches) a no-op. A program that also gives its own sarama clients
// DefaultRegistry reads that meter as 0 for a topic a member fetched
// first.
func quietPrepMeter(topic string) {
	metrics.DefaultRegistry.GetOrRegister(prepMeterName(topic), metrics.NilMeter{})
}

// prepMeterName is sarama's name of the meter (getMetricNameForTopic).
func prepMeterName(topic string) string {
	return "consumer-fetch-rate-for-topic-" + strings.ReplaceAll(topic, ".", "_")
}

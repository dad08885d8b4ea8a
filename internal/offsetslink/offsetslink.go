// Package offsetslink gives manager what package offsets keeps out of its
// public API: a hold on a KafkaStore's batcher, so that the final commits
// of a closing consumer share one round. offsets registers the function in
// its init (it imports this package, which imports nothing of the module),
// and manager, which imports offsets, calls it through Hold.
package offsetslink

// A Holder keeps a Kafka offset store's batcher from starting a round until
// the Commit and Reset calls it expects have been queued.
type Holder interface {
	// Fewer says that k of the expected calls will not come; the hold
	// ends when none is left. Idempotent once the hold ended.
	Fewer(k int)
	// Release ends the hold: the batcher takes what is queued.
	// Idempotent.
	Release()
}

var hold func(store any, n int) (Holder, bool)

// Register sets the function behind Hold. offsets calls it in its init.
func Register(f func(store any, n int) (Holder, bool)) { hold = f }

// Hold makes store (an *offsets.KafkaStore) take no Commit or Reset call
// into a round until n of them have been queued, Fewer said that some will
// not come, or Release is called; see offsets/kafka_hold.go. ok is false
// when store is not a KafkaStore (nothing is held).
func Hold(store any, n int) (h Holder, ok bool) {
	if hold == nil {
		return nil, false
	}
	return hold(store, n)
}

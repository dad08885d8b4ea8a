package offsets

import "github.com/zkgroup/zkgroup/internal/offsetslink"

// manager holds its store through offsetslink (the hold is not public API:
// only a closing consumer uses it).
func init() {
	offsetslink.Register(func(store any, n int) (offsetslink.Holder, bool) {
		s, ok := store.(*KafkaStore)
		if !ok || s == nil {
			return nil, false
		}
		return s.startHold(n), true
	})
}

// kafkaHold keeps a KafkaStore's batcher from starting a round until the
// Commit and Reset calls its holder expects have been queued, so that they
// share one round: one OffsetCommit and one OffsetFetch (the read-back)
// for all of them, where each would otherwise go into whichever round was
// starting when it came (the first one alone in a round, the rest in the
// next). A consumer closing holds its store while its partitions drain, so
// that their final commits go together. See startHold.
type kafkaHold struct {
	s *KafkaStore
	// want: Commit and Reset calls still expected (under s.mu).
	want int
}

// startHold makes the batcher take no Commit or Reset call into a round until
// n of them (any partition's) have been queued, Fewer said that some will
// not come, or Release is called. Fetch and CommitBatch calls are not
// held: they go out meanwhile in rounds of their own, since their callers
// may hold back what the holder waits for (a consumer's routine batch
// holds its partitions' final commits until it is answered; a partition
// that reads its committed offset is not stopped until it has the
// answer). Holds do not nest: Hold while another is in force releases the
// earlier one. The caller must Release it (or see it out through Fewer);
// with n <= 0 it is released at once. Safe for concurrent use.
func (s *KafkaStore) startHold(n int) *kafkaHold {
	h := &kafkaHold{s: s, want: n}
	s.mu.Lock()
	if n > 0 && !s.closed {
		s.hold = h
	}
	s.mu.Unlock()
	s.poke()
	return h
}

// Fewer says that k of the expected calls will not come; the hold ends
// when none is left. Idempotent once the hold ended.
func (h *kafkaHold) Fewer(k int) {
	h.s.mu.Lock()
	end := h.s.hold == h && h.s.countLocked(k)
	h.s.mu.Unlock()
	if end {
		h.s.poke()
	}
}

// Release ends the hold: the batcher takes what is queued. Idempotent.
func (h *kafkaHold) Release() {
	h.s.mu.Lock()
	if h.s.hold == h {
		h.s.hold = nil
	}
	h.s.mu.Unlock()
	h.s.poke()
}

// countLocked counts k expected calls as come (or not coming) and ends
// the hold when none is left; true when it ended. s.mu must be held.
func (s *KafkaStore) countLocked(k int) bool {
	if s.hold == nil {
		return false
	}
	s.hold.want -= k
	if s.hold.want > 0 {
		return false
	}
	s.hold = nil
	return true
}

// poke wakes the batcher.
func (s *KafkaStore) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pokeBoth wakes the batcher and the reader: at the end of either's round,
// what was queued or deferred meanwhile may be either's.
func (s *KafkaStore) pokeBoth() {
	s.poke()
	s.pokeReader()
}

// pokeReader wakes the reader (fetchLoop).
func (s *KafkaStore) pokeReader() {
	select {
	case s.fetchWake <- struct{}{}:
	default:
	}
}

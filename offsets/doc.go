// Package offsets tracks which delivered Kafka messages of one partition have
// been processed (acked) and derives the offset that is safe to commit.
//
// Messages of a partition are delivered in strictly increasing offset order,
// possibly with gaps (compacted topics, transaction markers), while acks may
// arrive in any order. A [Tracker] answers one question: which offset may be
// committed without losing an unprocessed message?
//
// The committable value follows Kafka's convention of naming the next offset
// to read:
//
//   - before anything is delivered, it is the start offset;
//   - while some delivered message is not yet acked, it is the lowest such
//     offset;
//   - when everything delivered is acked, it is the last delivered offset + 1.
//
// Committing the returned value therefore never implicitly acknowledges a
// message that has not been processed, and the value never moves backwards
// except through an explicit [Tracker.Reset].
//
// A Tracker keeps delivered-but-not-yet-committable entries in a ring buffer
// that grows by doubling and is reused, so Deliver and Ack do not allocate in
// steady state. Ack locates its entry by binary search.
//
// Nothing in this package is safe for concurrent use; the owner of a Tracker
// (the partition manager) must serialise calls. Nothing blocks.
package offsets

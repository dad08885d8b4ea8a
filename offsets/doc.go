// Package offsets tracks which delivered Kafka messages of one partition have
// been processed (acked), derives the offset that is safe to commit, and
// stores committed offsets: in Kafka ([KafkaStore], with OffsetCommit and
// OffsetFetch requests to the group coordinator, as a "simple" group with
// generation -1) or in ZooKeeper ([ZooKeeperStore], at
// /consumers/<group>/offsets/<topic>/<partition> as Kafka's ZooKeeper
// consumers did), with [Migrate] to move them between the two.
//
// Commits cost requests per interval, not per partition: [Store.CommitBatch]
// writes many partitions at once (one OffsetCommit request, one ZooKeeper
// multi), and the KafkaStore coalesces concurrent calls of every kind into
// rounds of one request each. Only single commits ([Store.Commit], a
// partition's final one) and failed writes are read back.
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
// steady state; it shrinks back when it empties after having been grown for
// more than it now holds, and [Tracker.Trim] releases it while idle. Ack
// locates its entry by binary search.
//
// A Tracker is not safe for concurrent use; its owner (the partition
// manager) serialises calls, and it never blocks. The stores are safe for
// concurrent use and block on the network, each call bounded by a timeout.
package offsets

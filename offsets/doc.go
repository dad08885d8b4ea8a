// Package offsets stores committed offsets: in Kafka ([KafkaStore], with OffsetCommit and
// OffsetFetch requests to the group coordinator, as a "simple" group with
// generation -1) or in ZooKeeper ([ZooKeeperStore], at
// /consumers/<group>/offsets/<topic>/<partition> as Kafka's ZooKeeper
// consumers did), with [Migrate] to move them between the two.
//
// Commits cost requests per interval, not per partition: [Store.CommitBatch]
// writes many partitions at once (an OffsetCommit request per 256 KiB of
// offset records, about 1,500 partitions; a ZooKeeper multi per 1,000),
// and the KafkaStore coalesces concurrent calls of every kind into rounds
// of one request each. Only single commits ([Store.Commit], a
// partition's final one) and failed writes are read back.
//
// Offsets follow Kafka's convention: a committed offset names the next
// offset to read, so committing N says every message below N was
// processed. Which N is safe to commit, given acks in any order, is the
// partition managers' business (they track the acks); this package only
// stores what they commit, and never moves an offset backwards except
// through an explicit reset ([Store.Reset], a seek or `offsets reset`).
//
// The stores are safe for concurrent use and block on the network, each
// call bounded by a timeout.
package offsets

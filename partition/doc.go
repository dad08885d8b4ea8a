// Package partition holds the per-partition types of a zkgroup consumer
// (package manager): the messages a manager.Consumer hands out (Message)
// and the batches they come in (Batch), what an ack did (AckResult), the
// stream of one owned partition (Stream, from
// manager.Consumer.EachPartition), the configuration every owned
// partition runs with (Config, manager.Config.Partition), a partition's
// snapshot (Stats, in manager.Stats.Partitions) and a partition's errors
// (Error, with its Op values and the sentinel errors it wraps).
//
// The consumer makes the messages, batches and streams; an embedder reads
// their fields and calls their methods, and never builds one (a Message or
// Batch built by hand belongs to no partition: its acks return
// AckInvalid). Package manager names these types by aliases too
// (manager.Message is Message, manager.PartitionConfig is Config, and so
// on): either name may be used.
package partition

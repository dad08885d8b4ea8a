// Package partition runs zkgroup's partition managers: one per partition
// this instance owns. A Manager streams the partition from Kafka through a
// sarama PartitionConsumer in goroutines of its own, so that a slow, unread
// or stuck partition never holds up another; it hands messages out only
// while its Fence allows it, tracks their acks with an offsets.Tracker,
// bounds the number of unacked messages (backpressure), commits the acked
// watermark to an offsets.Store on an interval, and on Stop drains, commits
// synchronously and verifies before its owner releases the claim.
//
// A Manager hands out on a channel of its own (a partition stream) or,
// when several share one channel (the merged stream), through a Funnel,
// which takes a batch at a time from each and keeps their senders from
// contending for that channel message by message.
//
// The consumer manager (package manager) creates and stops Managers; an
// embedder normally meets this package only through Message and Stats.
package partition

// Package partition runs zkgroup's partition managers: one per partition
// this instance owns. A Manager streams the partition from Kafka through a
// sarama PartitionConsumer in goroutines of its own, so that a slow, unread
// or stuck partition never holds up another; it hands messages out only
// while its Fence allows it, tracks their acks with an tracker.Tracker,
// bounds the number of unacked messages (backpressure), and on Stop
// drains, commits synchronously and verifies before its owner releases the
// claim.
//
// A consumer's routine commits are made by one Committer for all its
// Managers: every CommitInterval it takes each Manager's acked watermark
// and hands them to the store in one batch (one OffsetCommit request, or
// one ZooKeeper transaction, per interval, however many partitions).
//
// A Manager hands out batches, on a channel of its own (a partition
// stream) or on one shared by the consumer's Managers (the merged stream);
// the receiver checks each message with Batch.Pass before it reaches the
// user.
//
// # What an owned partition costs
//
// Goroutines per owned partition, and who owns them:
//
//   - the Manager's run goroutine (its tomb): reads the committed offset,
//     starts and reads the sarama PartitionConsumer, hands messages out;
//   - sarama's two per PartitionConsumer (its dispatcher and response
//     feeder), owned by sarama's Consumer until the run goroutine closes
//     the PartitionConsumer.
//
// Nothing watches the Fence: it calls the Manager when ownership is lost
// (Fence.AfterLost).
//
// Per consumer, not per partition: the Committer's goroutine, the
// KafkaStore's batcher. Stop ends
// the Manager's goroutines and waits for them.
//
// Timers: none per idle partition. Waits with timers happen only while a
// retry backs off (reading the committed offset, starting to fetch) and
// while Stop drains.
//
// Memory of an idle partition: the Manager (about 1 KB with its tomb and
// channels), the goroutines' stacks, and sarama's PartitionConsumer (its two
// channels of Config.ChannelBufferSize pointers, and the fetched messages
// they hold). The Tracker's ring grows with the messages outstanding (33
// bytes each: a backlog caught up with MaxUnacked 10,000 outstanding
// grows it to 16,384 slots, about 530 KB) and gives that memory back: the
// ring shrinks when it empties after having held far more than its last
// run needed, and the Committer releases it once the partition was idle
// for a whole interval. The batch a Manager takes from sarama's buffer
// comes from a pool shared by all Managers.
// BenchmarkIdleMemory measures it.
//
// The consumer manager (package manager) creates and stops Managers; an
// embedder never meets this package: manager.Message and manager.Batch
// are this package's Message and Batch seen through types of the same
// layout, and manager's other public types are copies.
package partition

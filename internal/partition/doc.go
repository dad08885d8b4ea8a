// Package partition runs zkgroup's partition managers: one per partition
// this instance owns. A Manager streams the partition from Kafka through
// the consumer's fetch.Fetcher (Params.Fetcher, seen through the Fetcher
// and Fetch interfaces; FetcherOf adapts a *fetch.Fetcher): one fetch
// loop per broker, a partition's records taken a response share at a time
// into one slab of Messages (see fetchpath.go), so that a slow, unread or
// stuck partition never holds up another; it hands messages out only
// while its Fence allows it, tracks their acks with a tracker.Tracker,
// bounds the number of unacked messages (backpressure), and on Stop
// drains, commits synchronously and verifies before its owner releases the
// claim.
//
// A consumer's routine commits are made by one Committer for all its
// Managers: every CommitInterval it takes each Manager's acked watermark
// and hands them to the store in one batch (one OffsetCommit request, or
// one ZooKeeper transaction, per interval, however many partitions).
//
// A Manager hands out batches (Handout: a public partition.Batch and
// what Pass needs), on a channel of its own (a partition stream) or on
// one shared by the consumer's Managers (the merged stream); the receiver
// checks each message with Handout.Pass before it reaches the user. The
// Manager is the owner the batches and their messages ack through.
//
// # What an owned partition costs
//
// Goroutines per owned partition: none of its own, and none at all while
// it is idle. New starts nothing; the Manager runs on the goroutine that
// calls Run, or Step (the consumer manager's slot goroutine, which also
// claims the partition before and releases it after; a goroutine of the
// test in this package's tests): it reads the committed offset, adds the
// partition to the Fetcher and takes its records, hands messages out,
// until Halt, Stop or the loss of ownership. With nothing to hand out,
// Step parks the run and returns: the goroutine ends, and whatever may
// bring work (records, a halt, a control request) calls Step's resume,
// which starts the next step (park.go). The fetch itself runs no
// goroutine per partition. Managers sharing one channel (the merged
// stream) take turns (Turns): a partition with records and no turn
// waits without a goroutine, so the partitions waiting for the receiver
// hold a few goroutines, not one each.
//
// Nothing watches the Fence: it calls the Manager when ownership is lost
// (Fence.AfterLost).
//
// Per consumer, not per partition: the Committer's goroutine, the
// KafkaStore's batcher, the Fetcher's router and one loop per broker. Stop
// halts the Manager and waits for a Run under way to return; it closes
// the partition's Fetch without waiting for the broker loop.
//
// Timers: none per idle partition. Waits with timers happen only while a
// retry backs off (reading the committed offset, starting to fetch) and
// while Stop drains.
//
// Memory of an idle partition: the Manager (about 1 KB with its
// channels; no goroutine stack) and its fetch.Partition (with up to
// Config.PartitionBuffer fetched shares its Manager has not taken; a
// Manager waiting for MaxUnacked room takes none, so its partition is left
// out of fetch requests). The Tracker's ring grows with the messages
// outstanding (17 bytes each: a backlog caught up with MaxUnacked 10,000
// outstanding grows it to 16,384 slots, about 280 KB) and gives that
// memory back: the ring shrinks when it empties after having held far
// more than its last run needed, and the Committer releases it once the
// partition was idle for a whole interval. Each share taken becomes one
// slab of Messages (one allocation for the share, one for each batch's
// pointers); the messages' keys and values are the fetched response's
// memory, kept alive while the user keeps them. BenchmarkIdleMemory
// measures it (TestIdleManagerCost bounds it).
//
// The consumer manager (package manager) creates and stops Managers; an
// embedder never meets this package. The types an embedder touches
// (Message, Batch, Stream, Config, Stats, Error) are package partition's
// (public), which this package names by aliases and builds through
// partlink.
package partition

// Package pipeline runs one worker per owned partition: each worker takes
// its partition's messages in offset order, hands them to the sink handler
// and acks them only once the handler said so. A handler that takes
// batches (a batch sink's) gets what the consumer handed over in one go,
// cut to the sink's limits (and joined up to its linger time), and the
// batch is acked once handled; any other handler gets the messages one by
// one. Partitions proceed concurrently; within a partition nothing is
// reordered, and a partition claimed again on this instance waits for its
// previous worker to finish.
package pipeline

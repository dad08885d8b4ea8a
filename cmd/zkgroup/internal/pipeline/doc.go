// Package pipeline runs one worker per owned partition: each worker takes
// its partition's messages in offset order, hands each to the sink handler
// and acks it only once the handler said so. Partitions proceed
// concurrently; within a partition nothing is reordered, and a partition
// claimed again on this instance waits for its previous worker to finish.
package pipeline

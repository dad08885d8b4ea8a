// Package ops implements the operator commands' logic: describing a group
// (members, owners, committed and log-end offsets, lag), planning and
// executing offset resets, and migrating offsets between ZooKeeper and
// Kafka storage. ZooKeeper is read through internal/zkconn (which applies
// the chroot); Kafka through sarama.
package ops

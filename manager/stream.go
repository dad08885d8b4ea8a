package manager

import "github.com/zkgroup/zkgroup/partition"

// PartitionStream is the stream of one owned partition in ModePartitions.
// It opens when the partition is claimed and its Messages channel is closed
// by the consumer after the partition was revoked (drained, committed) or
// lost. Safe for concurrent use.
type PartitionStream struct {
	topic      string
	partition  int32
	generation uint64
	ch         chan *partition.Message
}

// Topic returns the partition's topic.
func (s *PartitionStream) Topic() string { return s.topic }

// Partition returns the partition id.
func (s *PartitionStream) Partition() int32 { return s.partition }

// Generation identifies this ownership of the partition.
func (s *PartitionStream) Generation() uint64 { return s.generation }

// Messages delivers the partition's messages in offset order; closed on
// revoke. Unread, it holds up only this partition.
func (s *PartitionStream) Messages() <-chan *partition.Message { return s.ch }

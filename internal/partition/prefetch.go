package partition

import (
	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/fetch"
)

// Prefetched is a sarama PartitionConsumer opened for a partition before
// it is claimed, so that sarama's start-up (two offset queries and the
// broker consumer's 100 ms subscription batch) runs while a joining member
// waits for the group to settle. Nothing of it is handed out before the
// claim: the Manager that receives it (Params.Prefetched) reads the
// committed offset again once it holds the claim, and uses the
// PartitionConsumer only if it starts there; otherwise it closes it.
type Prefetched struct {
	PC sarama.PartitionConsumer
	// FP, on the fetch path (Params.Fetcher), instead of PC.
	FP *fetch.Partition
	// Offset is where PC starts.
	Offset int64
	// Initial is the position Offset was resolved from when the partition
	// had no committed offset (sarama.OffsetOldest or OffsetNewest), or 0.
	Initial int64
}

// close stops what pre opened: its fetch partition, or its sarama
// PartitionConsumer through r.
func (pre *Prefetched) close(r *Reaper) {
	switch {
	case pre.FP != nil:
		pre.FP.Close()
	case pre.PC != nil:
		r.Reap(pre.PC)
	}
}

package partition

// Prefetched is a partition's Fetch opened before the partition is
// claimed, so that fetching starts (the fetcher finds the leader and
// makes its first request) while a joining member waits for the group to
// settle. Nothing of it is handed out before the claim: the Manager that
// receives it (Params.Prefetched) reads the committed offset again once
// it holds the claim, and uses FP only if it starts there; otherwise it
// closes it.
type Prefetched struct {
	FP Fetch
	// Offset is where FP starts.
	Offset int64
	// Initial is the position Offset was resolved from when the partition
	// had no committed offset (sarama.OffsetOldest or OffsetNewest), or 0.
	Initial int64
}

// close stops fetching pre's partition.
func (pre *Prefetched) close() {
	if pre.FP != nil {
		pre.FP.Close()
	}
}

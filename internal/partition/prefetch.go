package partition

// Prefetched is a partition's Fetch opened before the partition is
// claimed, so that fetching starts (the fetcher finds the leader and
// makes its first request) while a joining member waits for the group to
// settle. Nothing of it is handed out before the claim: the Manager that
// receives it (Params.Prefetched) reads the committed offset again once
// it holds the claim, and uses FP only if it starts there; otherwise it
// closes it. A Prefetched opened where the committed offset read after
// the claim was made says so (Read), and the Manager does not read it
// again.
type Prefetched struct {
	FP Fetch
	// Offset is where FP starts.
	Offset int64
	// Initial is the position Offset was resolved from when the partition
	// had no committed offset (sarama.OffsetOldest or OffsetNewest), or 0.
	Initial int64
	// Read: Offset is the committed offset (Initial 0), or the partition
	// had none (Initial set), as read from the store after the claim was
	// made: the Manager starts there.
	Read bool
}

// StartsAt reports whether pre's fetch starts where a partition whose
// position is pos must: pos an offset (the committed offset) equal to
// Offset, or the Initial position Offset was resolved from when none is
// committed.
func (pre *Prefetched) StartsAt(pos int64) bool {
	return pre != nil && pre.FP != nil && (pos >= 0 && pos == pre.Offset || pos < 0 && pos == pre.Initial)
}

// start is where pre's partition starts, when pre was opened where the
// committed offset read after the claim says (ok), and that offset (-1:
// none, the Initial policy applies).
func (pre *Prefetched) start() (pos, committed int64, ok bool) {
	if pre == nil || !pre.Read || pre.FP == nil {
		return 0, 0, false
	}
	if pre.Initial != 0 {
		return pre.Initial, -1, true
	}
	return pre.Offset, pre.Offset, true
}

// close stops fetching pre's partition.
func (pre *Prefetched) close() {
	if pre.FP != nil {
		pre.FP.Close()
	}
}

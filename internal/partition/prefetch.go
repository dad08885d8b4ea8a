package partition

// Prefetched is a partition's Fetch opened before the partition is
// claimed, so that fetching starts (the fetcher finds the leader and
// makes its first request) while a joining member waits for the group to
// settle, or while the previous owner drains and lets go. Nothing of it
// is handed out before the claim: the Manager that receives it
// (Params.Prefetched) reads the committed offset again once it holds the
// claim, and uses FP only if it covers that position (see Covers);
// otherwise it closes it. A Prefetched whose position was read after the
// claim was made says so (Read), and the Manager does not read it again.
type Prefetched struct {
	FP Fetch
	// Offset is where FP starts.
	Offset int64
	// Initial is the position Offset was resolved from when the partition
	// had no committed offset (sarama.OffsetOldest or OffsetNewest), or 0.
	Initial int64
	// At, when above Offset, is where the partition starts: the offset
	// committed after FP was opened (by the previous owner's last
	// commits), read after the claim. FP fetches the records from Offset
	// to At on its way, and the Manager skips them. 0: Offset.
	At int64
	// Read: the partition's position (At or Offset, the committed
	// offset, Initial 0; or none committed, Initial set) was read from the
	// store after the claim was made: the Manager starts there.
	Read bool
}

// Covers reports whether pre's fetch serves a partition whose position is
// pos: pos an offset (the committed offset) at or above Offset, the
// records below it skipped (a previous owner that committed while the
// fetch was open processed them); or the Initial position Offset was
// resolved from when none is committed. A fetch that starts above pos
// would skip what pos asks for, and one opened at another Initial
// position is another position: neither covers.
func (pre *Prefetched) Covers(pos int64) bool {
	return pre != nil && pre.FP != nil && (pos >= 0 && pos >= pre.Offset || pos < 0 && pos == pre.Initial)
}

// start is where pre's partition starts, when its position was read
// after the claim (ok), and the committed offset (-1: none, the Initial
// policy applies).
func (pre *Prefetched) start() (pos, committed int64, ok bool) {
	if pre == nil || !pre.Read || pre.FP == nil {
		return 0, 0, false
	}
	if pre.Initial != 0 {
		return pre.Initial, -1, true
	}
	at := max(pre.Offset, pre.At)
	return at, at, true
}

// close stops fetching pre's partition.
func (pre *Prefetched) close() {
	if pre.FP != nil {
		pre.FP.Close()
	}
}

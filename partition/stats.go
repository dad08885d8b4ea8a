package partition

import "time"

// Stats is a snapshot of one owned partition (manager.Stats.Partitions):
// of one ownership, whose counters start at zero.
type Stats struct {
	Topic     string
	Partition int32
	// Generation identifies this ownership (see Message.Generation).
	Generation uint64
	// LastFetched is the offset of the last message handed out (-1: none).
	LastFetched int64
	// Acked is the acked watermark: the next offset to commit (-1 before
	// the start position is known).
	Acked int64
	// Committed is the last committed next-offset (-1: none known).
	Committed int64
	// HighWatermark is the partition's log-end offset as last fetched
	// (-1: unknown).
	HighWatermark int64
	// Lag is HighWatermark - Committed (or - Acked when nothing is
	// committed); -1 when unknown.
	Lag int64
	// Unacked counts the messages handed out and not yet acked.
	Unacked int
	// OldestUnackedAge is how long the oldest of them was handed out.
	OldestUnackedAge time.Duration
	// Suspended: nothing is handed out now because the ZooKeeper session
	// (the ownership's lease) is not known to be valid.
	Suspended bool
	// Counters of this ownership: messages handed out, acks counted,
	// duplicate (or unknown) acks, acks after the ownership ended, resets
	// of an out-of-range offset, failed fetches and commits.
	Delivered, Acks, DuplicateAcks, StaleAcks, Resets, FetchErrors, CommitErrors uint64
}

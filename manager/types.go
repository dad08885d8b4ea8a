package manager

import (
	"errors"
	"fmt"
	"time"

	"github.com/zkgroup/zkgroup/internal/partition"
	"github.com/zkgroup/zkgroup/subscription"
)

// Subscription is what a member consumes: static topics, or a whitelist
// or blacklist pattern (package subscription).
type Subscription = subscription.Subscription

// Static subscribes to the named topics.
func Static(topics ...string) (*Subscription, error) { return subscription.Static(topics...) }

// Whitelist subscribes to every topic matching the regular expression.
func Whitelist(pattern string) (*Subscription, error) { return subscription.Whitelist(pattern) }

// Blacklist subscribes to every topic not matching the regular expression.
func Blacklist(pattern string) (*Subscription, error) { return subscription.Blacklist(pattern) }

// PartitionConfig configures the partitions a consumer owns
// (Config.Partition). NewConfig sets its defaults.
type PartitionConfig struct {
	// MaxUnacked bounds the messages handed out and not yet acked, per
	// partition (default 10,000). When reached, the partition stops
	// handing out messages until acks arrive; other partitions go on.
	MaxUnacked int
	// CommitInterval is how often acked offsets are committed, for every
	// owned partition in one request (default 1 s).
	CommitInterval time.Duration
	// DrainTimeout bounds how long a revoke (or Close) waits for the acks
	// of what was handed out before it commits what was acked (default
	// 10 s; 0: no wait).
	DrainTimeout time.Duration
	// CommitTimeout bounds one commit: a routine commit, a final commit
	// and its read-back, a read of the committed offset (default 10 s).
	// A commit is also bounded by the end of its ownership's lease.
	CommitTimeout time.Duration
	// Initial is where to start without a committed offset, and where to
	// go when the committed offset is out of range: InitialOldest
	// (default) or InitialNewest.
	Initial string
	// RetryBackoff is about the first wait after a failed read of the
	// committed offset or fetch start (default 100 ms); the waits grow
	// exponentially up to RetryBackoffMax (default 5 s), jittered so that
	// the partitions of a consumer do not retry in lockstep.
	RetryBackoff    time.Duration
	RetryBackoffMax time.Duration
}

// Where a partition without a usable committed offset starts
// (PartitionConfig.Initial).
const (
	InitialOldest = "oldest"
	InitialNewest = "newest"
)

// PartitionStats is a snapshot of one owned partition (Stats.Partitions).
type PartitionStats struct {
	Topic     string
	Partition int32
	// Generation identifies this ownership (see Message.Generation).
	Generation uint64
	// LastFetched is the offset of the last message handed out (-1: none).
	LastFetched int64
	// Acked is the acked watermark: the next offset to commit.
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

// PartitionError is the error of one partition, on Errors() or returned
// by a call on it: its topic, partition and operation, unwrapping to the
// cause. The cause wraps one of ErrFetch, ErrCommit (offsets.ErrCommit),
// offsets.ErrFetch, ErrLost, ErrSuspended, ErrReset, ErrStopped,
// ErrDrainLate or ErrConfig (see Op).
type PartitionError struct {
	Topic     string
	Partition int32
	// Op is what failed: OpFetch, OpCommit, OpStart, OpReset, OpDrain,
	// OpSeek or OpControl.
	Op  string
	Err error
}

func (e *PartitionError) Error() string {
	return fmt.Sprintf("partition %s/%d: %s: %v", e.Topic, e.Partition, e.Op, e.Err)
}

func (e *PartitionError) Unwrap() error { return e.Err }

// PartitionError.Op values.
const (
	// OpFetch: fetching messages from Kafka failed (wraps ErrFetch); the
	// fetch is retried.
	OpFetch = "fetch"
	// OpCommit: a commit failed or was refused (wraps ErrCommit, which is
	// offsets.ErrCommit, and ErrLost / ErrSuspended when the ownership did
	// not allow it); a routine commit is retried at the next interval.
	OpCommit = "commit"
	// OpStart: reading the committed offset failed (wraps
	// offsets.ErrFetch); retried with a backoff.
	OpStart = "start"
	// OpReset: the position was out of range and was reset after
	// PartitionConfig.Initial (wraps ErrReset); messages may have been
	// skipped (the log was truncated) or will be repeated.
	OpReset = "reset"
	// OpDrain: a revoke's drain ended with messages unacked (wraps
	// ErrDrainLate) or lost the partition (ErrLost).
	OpDrain = "drain"
	// OpSeek: Seek or SeekTime failed (wraps the cause: ErrConfig for a
	// negative offset or a zero time, ErrStopped, ErrLost, ErrSuspended,
	// or a read or commit error).
	OpSeek = "seek"
	// OpControl: Pause, Resume, Seek or SeekTime on an ownership that
	// ended (wraps ErrStopped).
	OpControl = "control"
)

// Partition errors, wrapped by the *PartitionError values on Errors() and
// returned by calls on a partition.
var (
	// ErrFetch: fetching messages from Kafka failed (reading a committed
	// offset is offsets.ErrFetch).
	ErrFetch error = errFetch
	// ErrCommit: a commit failed: offsets.ErrCommit, the same value.
	ErrCommit error = errCommit
	// ErrLost: the partition's ownership was lost (the ZooKeeper session
	// expired, or its owner node was deleted or taken).
	ErrLost error = errLost
	// ErrSuspended: the ZooKeeper session is suspended (the lease is not
	// known to be valid): nothing is committed.
	ErrSuspended error = errSuspended
	// ErrReset: the committed offset was out of range and reset.
	ErrReset error = errReset
	// ErrStopped: the ownership of the partition ended (revoked, lost, or
	// the consumer closed) before or during a call on it (ErrNotOwned: the
	// partition was not owned here when the call began).
	ErrStopped error = errStopped
	// ErrDrainLate: the drain deadline passed with unacked messages.
	ErrDrainLate error = errDrainLate
)

// The partition managers' values, so that errors.Is matches what they
// wrap.
var (
	errFetch     = partition.ErrFetch
	errCommit    = partition.ErrCommit
	errLost      = partition.ErrLost
	errSuspended = partition.ErrSuspended
	errReset     = partition.ErrReset
	errStopped   = partition.ErrStopped
	errDrainLate = partition.ErrDrainLate
)

// publicErr turns the partition managers' *partition.Error values in err
// (itself, or joined) into *PartitionError, the same fields.
func publicErr(err error) error {
	if errors.Is(err, partition.ErrCommitterClosed) && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	switch e := err.(type) {
	case *partition.Error:
		return (*PartitionError)(e)
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		out := make([]error, len(errs))
		changed := false
		for i, x := range errs {
			out[i] = publicErr(x)
			changed = changed || out[i] != x
		}
		if changed {
			return errors.Join(out...)
		}
	}
	return err
}

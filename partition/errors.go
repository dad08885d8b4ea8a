package partition

import (
	"errors"
	"fmt"
	"github.com/zkgroup/zkgroup"

	"github.com/zkgroup/zkgroup/offsets"
)

// Error is the error of one partition, on manager.Consumer.Errors() or
// returned by a call on it: its topic, partition and operation, unwrapping
// to the cause. The cause wraps one of ErrFetch, ErrCommit
// (offsets.ErrCommit), offsets.ErrFetchOffset, ErrLost, ErrSuspended, ErrReset,
// ErrStopped, ErrDrainLate or zkgroup.ErrConfig (see the Op values).
type Error struct {
	Topic     string
	Partition int32
	// Op is what failed: OpFetch, OpCommit, OpStart, OpReset, OpDrain,
	// OpSeek or OpControl.
	Op  string
	Err error
}

// Error returns "partition <topic>/<partition>: <op>: <cause>".
func (e *Error) Error() string {
	return fmt.Sprintf("partition %s/%d: %s: %v", e.Topic, e.Partition, e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Error.Op values.
const (
	// OpFetch: fetching messages from Kafka failed (wraps ErrFetch); the
	// fetch is retried.
	OpFetch = "fetch"
	// OpCommit: a commit failed or was refused (wraps ErrCommit, which is
	// offsets.ErrCommit, and ErrLost / ErrSuspended when the ownership did
	// not allow it); a routine commit is retried at the next interval.
	OpCommit = "commit"
	// OpStart: reading the committed offset failed (wraps
	// offsets.ErrFetchOffset); retried with a backoff.
	OpStart = "start"
	// OpReset: the position was out of range and was reset after
	// Config.Initial (wraps ErrReset); messages may have been skipped (the
	// log was truncated) or will be repeated.
	OpReset = "reset"
	// OpDrain: a revoke's drain ended with messages unacked (wraps
	// ErrDrainLate) or lost the partition (ErrLost).
	OpDrain = "drain"
	// OpSeek: Seek or SeekTime failed (wraps the cause: zkgroup.ErrConfig
	// for a negative offset or a zero time, ErrStopped, ErrLost,
	// ErrSuspended, or a read or commit error).
	OpSeek = "seek"
	// OpControl: Pause, Resume, Seek or SeekTime on an ownership that
	// ended (wraps ErrStopped).
	OpControl = "control"
)

// Partition errors, wrapped by the *Error values a consumer reports and
// returns. manager declares the same values (manager.ErrFetch is
// ErrFetch, and so on).
var (
	// ErrFetch: fetching messages from Kafka failed (reading a committed
	// offset is offsets.ErrFetchOffset).
	ErrFetch = errors.New("partition: fetching messages failed")
	// ErrCommit: a commit failed: offsets.ErrCommit, the same value.
	ErrCommit = offsets.ErrCommit
	// ErrLost: the partition's ownership was lost (the ZooKeeper session
	// expired, or its owner node was deleted or taken).
	ErrLost = errors.New("partition: ownership lost")
	// ErrSuspended: the ZooKeeper session is suspended (no reply within
	// 2/3 of its timeout; the lease is not known to be valid): nothing is
	// committed or handed out until it is healthy again, or the
	// ownership is lost with it.
	ErrSuspended = errors.New("partition: session suspended, commits held back")
	// ErrReset: the committed offset was out of range and reset.
	ErrReset = errors.New("partition: offset out of range, reset")
	// ErrStopped: the ownership of the partition ended (revoked, lost, or
	// the consumer closed) before or during a call on it
	// (manager.ErrNotOwned: the partition was not owned when the call
	// began).
	ErrStopped = errors.New("partition: manager stopped")
	// ErrDrainLate: the drain deadline passed with unacked messages.
	ErrDrainLate = errors.New("partition: drain deadline passed with unacked messages")
	// ErrTruncated: the partition's log was truncated below the position
	// (an unclean leader election), reported with Op OpFetch and both
	// offsets; the position is then reset after Config.Initial (OpReset
	// follows). zkgroup.ErrLogTruncated, the same value. Detected with
	// the Kafka protocol version 2.7 or later (Config.Sarama.Version).
	ErrTruncated = zkgroup.ErrLogTruncated
)

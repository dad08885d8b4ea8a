package partition

import (
	"errors"
	"fmt"

	"github.com/zkgroup/zkgroup/offsets"
)

// Sentinel errors, wrapped in *Error. Package manager exports them (the
// same values) for its embedders.
var (
	// ErrFetch: fetching messages from Kafka failed (reading a committed
	// offset is offsets.ErrFetch).
	ErrFetch = errors.New("partition: fetching messages failed")
	// ErrCommit is the offset stores' own: one value for a failed commit.
	ErrCommit = offsets.ErrCommit
	ErrLost   = errors.New("partition: ownership lost")
	// ErrSuspended: the ZooKeeper session is suspended (no reply within
	// 2/3 of its timeout); commits and hand-outs are held back until it is
	// healthy again, or the claim is lost with it.
	ErrSuspended = errors.New("partition: session suspended, commits held back")
	ErrReset     = errors.New("partition: offset out of range, reset")
	ErrStopped   = errors.New("partition: manager stopped")
	ErrDrainLate = errors.New("partition: drain deadline passed with unacked messages")
)

// Error is an error of one partition. Errors are reported on the
// consumer's Errors() channel and returned by Stop.
type Error struct {
	Topic     string
	Partition int32
	Op        string // "fetch", "commit", "start", "reset", "drain", "seek", "control"
	Err       error
}

func (e *Error) Error() string {
	return fmt.Sprintf("partition %s/%d: %s: %v", e.Topic, e.Partition, e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// commitError wraps err, the failure to commit offset next, in ErrCommit
// unless it wraps it already (the stores' errors do).
func commitError(next int64, err error) error {
	if errors.Is(err, ErrCommit) {
		return fmt.Errorf("offset %d: %w", next, err)
	}
	return fmt.Errorf("%w: offset %d: %w", ErrCommit, next, err)
}

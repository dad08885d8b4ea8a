package partition

import (
	"errors"
	"fmt"
)

// Sentinel errors, wrapped in *Error.
var (
	ErrFetch  = errors.New("partition: fetch failed")
	ErrCommit = errors.New("partition: commit failed")
	ErrStart  = errors.New("partition: start failed")
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
	Op        string // "fetch", "commit", "start", "reset", "drain"
	Err       error
}

func (e *Error) Error() string {
	return fmt.Sprintf("partition %s/%d: %s: %v", e.Topic, e.Partition, e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

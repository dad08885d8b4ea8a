package sink

import (
	"context"
	"errors"

	"github.com/zkgroup/zkgroup"
	"github.com/zkgroup/zkgroup/manager"
)

// Sink delivers one message at a time. Implementations are safe for
// concurrent use by several partitions' workers.
type Sink interface {
	// Deliver delivers m; nil means it was delivered and may be acked. It
	// blocks until delivered, failed, or ctx is done. An error wrapping
	// ErrPermanent is not retried.
	Deliver(ctx context.Context, m *manager.Message) error
	// Close releases the sink's resources; idempotent.
	Close() error
}

// Sentinel errors. Read-only; safe for concurrent use.
var (
	// ErrPermanent marks a failure that a retry cannot fix (an HTTP 400).
	ErrPermanent = errors.New("sink: permanent failure")
	// ErrStop is wrapped by Handle when a message failed for good under
	// the stop policy: it must not be acked and the daemon must stop.
	ErrStop = errors.New("sink: message failed; stopping")
	// ErrConfig reports a bad sink setting; the message names it. It is
	// zkgroup.ErrConfig, the module's one sentinel for an invalid
	// configuration or argument.
	ErrConfig = zkgroup.ErrConfig
	// ErrTooLarge marks a message that cannot be handed to the sink at all
	// (its key and headers exceed a process's environment limit); it comes
	// wrapped in a PermanentError.
	ErrTooLarge = errors.New("sink: message too large for the sink")
)

// PermanentError wraps an error that must not be retried; it unwraps to
// ErrPermanent and the cause. A plain value, safe for concurrent reads.
type PermanentError struct{ Err error }

// Error returns the cause's text.
func (e *PermanentError) Error() string { return e.Err.Error() }

// Unwrap returns ErrPermanent and the cause.
func (e *PermanentError) Unwrap() []error { return []error{ErrPermanent, e.Err} }

// Permanent marks err as not retriable; nil stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

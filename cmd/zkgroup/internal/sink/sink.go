package sink

import (
	"context"
	"errors"
	"time"

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

// BatchSink is a Sink that delivers several messages of one partition as a
// whole. The pipeline hands a BatchSink only batches (DeliverBatch), never
// single messages: its Deliver must deliver a message in the same form as
// a batch of one. Implementations are safe for concurrent use by several
// partitions' workers.
type BatchSink interface {
	Sink
	// DeliverBatch delivers msgs: one partition's messages in offset
	// order, within the sink's BatchLimits (a single message may exceed
	// MaxBytes alone). nil means every message was delivered and the
	// batch may be acked. An error means none may be acked (some may have
	// reached the sink: delivery is at least once). It blocks until
	// delivered, failed, or ctx is done. An error wrapping ErrPermanent
	// is not retried as a batch; after such an error, or after the last
	// attempt failed, the handler delivers the messages again one at a
	// time, each as a batch of one (DeliverBatch with one message: the
	// same form as any batch), to find the message that fails. The slice
	// is the caller's: the caller reuses it once DeliverBatch returned.
	DeliverBatch(ctx context.Context, msgs []*manager.Message) error
	// BatchLimits says how much one DeliverBatch takes. Constant for the
	// sink's life; does not block.
	BatchLimits() BatchLimits
}

// BatchLimits bounds one batch handed to a BatchSink. A zero field is no
// limit (a zero Linger: hand over what was taken in one go, never wait for
// more). A batch holds messages of one partition only; lingering, it
// waits for what the consumer hands out next, which stops at
// partition.max_unacked messages in flight (then the batch waits out its
// linger), and a drain on revoke waits for the linger too (the daemon's
// own stop does not: the pipeline hurries). A plain value.
type BatchLimits struct {
	MaxMessages int           // most messages in one batch
	MaxBytes    int           // most bytes (MessageSize summed) in one batch
	Linger      time.Duration // how long a partial batch may wait for more messages
}

// MessageSize is what a message counts against BatchLimits.MaxBytes: its
// key, value, and header keys and values. Pure.
func MessageSize(m *manager.Message) int {
	n := len(m.Key) + len(m.Value)
	for _, h := range m.Headers {
		if h != nil {
			n += len(h.Key) + len(h.Value)
		}
	}
	return n
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

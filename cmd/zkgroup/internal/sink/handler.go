package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/zkgroup/zkgroup/internal/retry"
	"github.com/zkgroup/zkgroup/manager"
)

// Policies after the last failed attempt (the values of the config's
// sink.on_failure).
const (
	PolicyStop       = "stop"
	PolicySkip       = "skip"
	PolicyDeadLetter = "dead-letter"
)

// Outcome says what Handle did with a message that may be acked.
type Outcome int

// Outcomes.
const (
	Delivered    Outcome = iota + 1 // the sink succeeded
	Skipped                         // failed for good, skipped (policy skip)
	DeadLettered                    // failed for good, sent to the dead-letter topic
)

// String names the outcome for logs.
func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Skipped:
		return "skipped"
	case DeadLettered:
		return "dead-lettered"
	}
	return "failed"
}

// DeadLetterer stores a message that failed for good. Implementations are
// safe for concurrent use.
type DeadLetterer interface {
	DeadLetter(ctx context.Context, m *manager.Message, cause error) error
	Close() error
}

// Policy configures a Handler.
type Policy struct {
	MaxAttempts    int           // including the first; at least 1
	InitialBackoff time.Duration // wait after the first failure; doubles (see Backoff)
	MaxBackoff     time.Duration // cap of the doubling wait (see Backoff)
	OnFailure      string        // PolicyStop, PolicySkip or PolicyDeadLetter
	DeadLetter     DeadLetterer  // required with PolicyDeadLetter
	Logger         *slog.Logger  // nil discards
}

// Stats counts a Handler's work since it was created. A plain value.
type Stats struct {
	Delivered    uint64 // messages the sink took
	Skipped      uint64 // messages skipped after failing (policy skip)
	DeadLettered uint64 // messages sent to the dead-letter topic
	Failed       uint64 // messages that failed for good under policy stop (or whose dead-lettering failed)
	Errors       uint64 // failed attempts (of a message or of a batch)
	Retries      uint64 // attempts after the first (of a message or of a batch)
	// Batches counts the batches a BatchSink took whole (their messages
	// count in Delivered too).
	Batches uint64
	// BatchFallbacks counts the batches that failed for good and were
	// delivered again one message at a time.
	BatchFallbacks uint64
}

// Handler delivers messages through a Sink with retries and a failure
// policy, one at a time (Handle) or, through a BatchSink, a batch at a time
// (HandleBatch). Safe for concurrent use.
type Handler struct {
	sink   Sink
	batch  BatchSink // sink as a BatchSink; nil when it is not one
	pol    Policy
	log    *slog.Logger
	sleep  func(ctx context.Context, d time.Duration) error
	counts struct {
		delivered, skipped, deadLettered, failed, errors, retries, batches, fallbacks atomic.Uint64
	}
}

// NewHandler validates p and returns a Handler over s. Does not block.
func NewHandler(s Sink, p Policy) (*Handler, error) {
	switch {
	case s == nil:
		return nil, fmt.Errorf("%w: handler: nil sink", ErrConfig)
	case p.MaxAttempts < 1:
		return nil, fmt.Errorf("%w: MaxAttempts: %d is under 1", ErrConfig, p.MaxAttempts)
	case p.InitialBackoff <= 0:
		return nil, fmt.Errorf("%w: InitialBackoff: %v is not positive", ErrConfig, p.InitialBackoff)
	case p.MaxBackoff < p.InitialBackoff:
		return nil, fmt.Errorf("%w: MaxBackoff: %v is under InitialBackoff %v", ErrConfig, p.MaxBackoff, p.InitialBackoff)
	}
	switch p.OnFailure {
	case PolicyStop, PolicySkip:
	case PolicyDeadLetter:
		if p.DeadLetter == nil {
			return nil, fmt.Errorf("%w: OnFailure %q needs a DeadLetter", ErrConfig, p.OnFailure)
		}
	default:
		return nil, fmt.Errorf("%w: OnFailure: %q is not %q, %q or %q", ErrConfig, p.OnFailure, PolicyStop, PolicySkip, PolicyDeadLetter)
	}
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bs, _ := s.(BatchSink)
	return &Handler{sink: s, batch: bs, pol: p, log: log, sleep: sleepCtx}, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Backoff returns the interval around which the wait before attempt n+1
// after n failed attempts (n >= 1) lies: initial * 2^(n-1), capped at max.
// The Handler's waits are these intervals jittered by ±retry.Jitter (the
// one jittered backoff of zkgroup, internal/retry), so that partitions
// failing together do not retry in step. Pure.
func Backoff(n int, initial, max time.Duration) time.Duration {
	d := initial
	for i := 1; i < n; i++ {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return min(d, max)
}

// attempt runs f up to MaxAttempts times with the jittered backoff; it
// returns the last error. Permanent errors and a done ctx end it early.
// where names what is attempted in the retry log lines.
func (h *Handler) attempt(ctx context.Context, what string, where []any, f func(context.Context) error) error {
	var err error
	var wait *retry.Backoff
	for n := 1; ; n++ {
		if n > 1 {
			h.counts.retries.Add(1)
		}
		if err = f(ctx); err == nil {
			return nil
		}
		h.counts.errors.Add(1)
		if errors.Is(err, ErrPermanent) || ctx.Err() != nil || n >= h.pol.MaxAttempts {
			return err
		}
		if wait == nil {
			wait = retry.New(h.pol.InitialBackoff, h.pol.MaxBackoff)
		}
		d := wait.Next()
		h.log.Warn(what+" failed; retrying", append(where[:len(where):len(where)],
			"attempt", n, "of", h.pol.MaxAttempts, "retry_in", d, "error", err)...)
		if serr := h.sleep(ctx, d); serr != nil {
			return err
		}
	}
}

// at names a message in log lines.
func at(m *manager.Message) []any {
	return []any{"topic", m.Topic, "partition", m.Partition, "offset", m.Offset}
}

// Handle delivers m. A nil error means m may be acked; the Outcome says
// how it ended. When m failed for good under policy stop, when its
// dead-lettering failed too, or when ctx ended first, the error wraps
// ErrStop (or ctx's error) and m must not be acked. Blocks for the
// attempts and backoffs, bounded by ctx.
func (h *Handler) Handle(ctx context.Context, m *manager.Message) (Outcome, error) {
	return h.handle(ctx, m, h.sink.Deliver)
}

// handle is Handle delivering through deliver.
func (h *Handler) handle(ctx context.Context, m *manager.Message, deliver func(context.Context, *manager.Message) error) (Outcome, error) {
	err := h.attempt(ctx, "sink", at(m), func(ctx context.Context) error { return deliver(ctx, m) })
	if err == nil {
		h.counts.delivered.Add(1)
		return Delivered, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return 0, fmt.Errorf("sink: %s/%d@%d not delivered: %w (last error: %v)", m.Topic, m.Partition, m.Offset, cerr, err)
	}
	where := append(at(m), "error", err)
	switch h.pol.OnFailure {
	case PolicySkip:
		h.counts.skipped.Add(1)
		h.log.Error("message failed for good; skipped (on_failure skip)", where...)
		return Skipped, nil
	case PolicyDeadLetter:
		derr := h.attempt(ctx, "dead-letter", at(m), func(ctx context.Context) error { return h.pol.DeadLetter.DeadLetter(ctx, m, err) })
		if derr == nil {
			h.counts.deadLettered.Add(1)
			h.log.Error("message failed for good; sent to the dead-letter topic", where...)
			return DeadLettered, nil
		}
		h.counts.failed.Add(1)
		return 0, fmt.Errorf("%w: %s/%d@%d: %w; dead-lettering failed too: %w", ErrStop, m.Topic, m.Partition, m.Offset, err, derr)
	}
	h.counts.failed.Add(1)
	return 0, fmt.Errorf("%w: %s/%d@%d after %d attempt(s): %w", ErrStop, m.Topic, m.Partition, m.Offset, h.pol.MaxAttempts, err)
}

// BatchLimits returns the sink's BatchLimits and true when it is a
// BatchSink (HandleBatch then delivers batches whole). Does not block.
func (h *Handler) BatchLimits() (BatchLimits, bool) {
	if h.batch == nil {
		return BatchLimits{}, false
	}
	return h.batch.BatchLimits(), true
}

// HandleBatch delivers msgs, one partition's messages in offset order
// within the sink's BatchLimits, and returns how many of them, from the
// first, may be acked: all with a nil error. Nothing is acked by it.
//
// Through a BatchSink the batch is attempted whole (DeliverBatch), with
// the retries and the jittered backoff of Handle. A batch that fails for
// good (a permanent error, or its last attempt failed) is delivered again
// one message at a time, each as a batch of one with the retries and the
// policy of Handle: so only a message that fails alone is skipped,
// dead-lettered or stops the daemon, and the others are delivered (some
// possibly twice: delivery is at least once). A batch of one is handled as
// that message at once. A sink that is not a BatchSink gets Handle for
// each message.
//
// With an error (wrapping ErrStop, or ctx's error once ctx ended) msgs[n]
// is the message that was not delivered, and msgs[n:] must not be acked.
// Blocks for the attempts and backoffs, bounded by ctx.
func (h *Handler) HandleBatch(ctx context.Context, msgs []*manager.Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	if h.batch == nil {
		for i, m := range msgs {
			if _, err := h.Handle(ctx, m); err != nil {
				return i, err
			}
		}
		return len(msgs), nil
	}
	if len(msgs) == 1 {
		if _, err := h.handle(ctx, msgs[0], h.deliverOne); err != nil {
			return 0, err
		}
		h.counts.batches.Add(1)
		return 1, nil
	}
	first, last := msgs[0], msgs[len(msgs)-1]
	where := []any{"topic", first.Topic, "partition", first.Partition, "offset", first.Offset, "last_offset", last.Offset, "messages", len(msgs)}
	err := h.attempt(ctx, "sink batch", where, func(ctx context.Context) error { return h.batch.DeliverBatch(ctx, msgs) })
	if err == nil {
		h.counts.delivered.Add(uint64(len(msgs)))
		h.counts.batches.Add(1)
		return len(msgs), nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return 0, fmt.Errorf("sink: %s/%d@%d..%d not delivered: %w (last error: %v)", first.Topic, first.Partition, first.Offset, last.Offset, cerr, err)
	}
	h.counts.fallbacks.Add(1)
	h.log.Warn("batch failed for good; delivering its messages one at a time", append(where, "error", err)...)
	for i, m := range msgs {
		if _, err := h.handle(ctx, m, h.deliverOne); err != nil {
			return i, err
		}
	}
	return len(msgs), nil
}

// deliverOne delivers m as a batch of one, in the batch form of the sink.
func (h *Handler) deliverOne(ctx context.Context, m *manager.Message) error {
	one := [1]*manager.Message{m}
	return h.batch.DeliverBatch(ctx, one[:])
}

// Stats returns the counters. Safe for concurrent use; does not block.
func (h *Handler) Stats() Stats {
	return Stats{
		Delivered: h.counts.delivered.Load(), Skipped: h.counts.skipped.Load(),
		DeadLettered: h.counts.deadLettered.Load(), Failed: h.counts.failed.Load(),
		Errors: h.counts.errors.Load(), Retries: h.counts.retries.Load(),
		Batches: h.counts.batches.Load(), BatchFallbacks: h.counts.fallbacks.Load(),
	}
}

// Close closes the sink and the dead-letterer.
func (h *Handler) Close() error {
	err := h.sink.Close()
	if h.pol.DeadLetter != nil {
		err = errors.Join(err, h.pol.DeadLetter.Close())
	}
	return err
}

package sink

import (
	"context"
	"errors"
	"fmt"
	"github.com/zkgroup/zkgroup/manager"
	"log/slog"
	"sync/atomic"
	"time"
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
	InitialBackoff time.Duration // wait after the first failure; doubles
	MaxBackoff     time.Duration // cap of the wait
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
	Errors       uint64 // failed attempts
	Retries      uint64 // attempts after the first
}

// Handler delivers messages through a Sink with retries and a failure
// policy. Safe for concurrent use.
type Handler struct {
	sink   Sink
	pol    Policy
	log    *slog.Logger
	sleep  func(ctx context.Context, d time.Duration) error
	counts struct {
		delivered, skipped, deadLettered, failed, errors, retries atomic.Uint64
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
	return &Handler{sink: s, pol: p, log: log, sleep: sleepCtx}, nil
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

// Backoff returns the wait before attempt n+1 after n failed attempts
// (n >= 1): initial * 2^(n-1), capped at max. Pure.
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

// attempt runs f up to MaxAttempts times with backoff; it returns the last
// error. Permanent errors and a done ctx end it early.
func (h *Handler) attempt(ctx context.Context, what string, m *manager.Message, f func(context.Context) error) error {
	var err error
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
		wait := Backoff(n, h.pol.InitialBackoff, h.pol.MaxBackoff)
		h.log.Warn(what+" failed; retrying", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset,
			"attempt", n, "of", h.pol.MaxAttempts, "retry_in", wait, "error", err)
		if serr := h.sleep(ctx, wait); serr != nil {
			return err
		}
	}
}

// Handle delivers m. A nil error means m may be acked; the Outcome says
// how it ended. When m failed for good under policy stop, when its
// dead-lettering failed too, or when ctx ended first, the error wraps
// ErrStop (or ctx's error) and m must not be acked. Blocks for the
// attempts and backoffs, bounded by ctx.
func (h *Handler) Handle(ctx context.Context, m *manager.Message) (Outcome, error) {
	err := h.attempt(ctx, "sink", m, func(ctx context.Context) error { return h.sink.Deliver(ctx, m) })
	if err == nil {
		h.counts.delivered.Add(1)
		return Delivered, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return 0, fmt.Errorf("sink: %s/%d@%d not delivered: %w (last error: %v)", m.Topic, m.Partition, m.Offset, cerr, err)
	}
	where := []any{"topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "error", err}
	switch h.pol.OnFailure {
	case PolicySkip:
		h.counts.skipped.Add(1)
		h.log.Error("message failed for good; skipped (on_failure skip)", where...)
		return Skipped, nil
	case PolicyDeadLetter:
		derr := h.attempt(ctx, "dead-letter", m, func(ctx context.Context) error { return h.pol.DeadLetter.DeadLetter(ctx, m, err) })
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

// Stats returns the counters. Safe for concurrent use; does not block.
func (h *Handler) Stats() Stats {
	return Stats{
		Delivered: h.counts.delivered.Load(), Skipped: h.counts.skipped.Load(),
		DeadLettered: h.counts.deadLettered.Load(), Failed: h.counts.failed.Load(),
		Errors: h.counts.errors.Load(), Retries: h.counts.retries.Load(),
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

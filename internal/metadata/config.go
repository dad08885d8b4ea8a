package metadata

import (
	"errors"
	"time"
)

// Limits checked by Config.Validate.
const (
	MinResync = time.Second
)

// Config tunes a Watcher. It is a plain value: copy it freely; safe for
// concurrent reads.
type Config struct {
	// Resync is the mean interval of the safety resync, which reads the
	// topic list and every selected topic node again (never the partition
	// state nodes) in case a watch was lost. Every change is seen through
	// a watch first; the resync only repairs what a lost watch would miss.
	// Each interval is drawn from [Resync/2, 3*Resync/2] (retry.Jitter),
	// so that the members of a group do not resync in step. Default 60s,
	// at least 1s.
	Resync time.Duration
	// Debounce coalesces bursts of watch events: the first event of a burst
	// schedules one refresh Debounce later, and events until then join it.
	// Default 100ms; 0 refreshes right after each event; not negative.
	Debounce time.Duration
	// OnMalformed, when set, is called with a *MalformedError once for
	// each malformed topic node skipped (again after it changed), from the
	// watcher's goroutine: it must not block.
	OnMalformed func(err error)
}

// NewConfig returns the defaults: 60s resync, 100ms debounce.
// It is safe for concurrent use and does not block.
func NewConfig() Config {
	return Config{
		Resync:   60 * time.Second,
		Debounce: 100 * time.Millisecond,
	}
}

// Validate reports every field out of range as a *ConfigError (joined with
// errors.Join), each wrapping ErrConfig. It is safe for concurrent
// use and does not block.
func (c Config) Validate() error {
	var errs []error
	if c.Resync < MinResync {
		errs = append(errs, &ConfigError{Field: "Resync", Value: c.Resync, Reason: "must be at least " + MinResync.String()})
	}
	if c.Debounce < 0 {
		errs = append(errs, &ConfigError{Field: "Debounce", Value: c.Debounce, Reason: "must not be negative"})
	}
	return errors.Join(errs...)
}

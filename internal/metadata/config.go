package metadata

import (
	"errors"
	"time"
)

// Limits checked by Config.Validate.
const (
	MinSessionTimeout = 2 * time.Second
	MinLeaderRefresh  = 100 * time.Millisecond
)

// Config tunes a Watcher. It is a plain value: copy it freely; safe for
// concurrent reads.
type Config struct {
	// SessionTimeout is the ZooKeeper session timeout of the watcher's own
	// read-only session. Default 10s, at least 2s.
	SessionTimeout time.Duration
	// LeaderRefresh is how often the whole view (topic list, partition
	// lists and every selected partition's leader) is read again: kazoo-go
	// cannot watch partition state nodes, so leaders are polled. Default
	// 2s, at least 100ms.
	LeaderRefresh time.Duration
	// Debounce coalesces bursts of watch events: the first event of a burst
	// schedules one refresh Debounce later, and events until then join it.
	// Default 100ms; 0 refreshes right after each event; not negative.
	Debounce time.Duration
}

// NewConfig returns the defaults: 10s session, 2s leader refresh, 100ms
// debounce. It is safe for concurrent use and does not block.
func NewConfig() Config {
	return Config{
		SessionTimeout: 10 * time.Second,
		LeaderRefresh:  2 * time.Second,
		Debounce:       100 * time.Millisecond,
	}
}

// Validate reports every field out of range as a *ConfigError (joined with
// errors.Join), each wrapping ErrInvalidConfig. It is safe for concurrent
// use and does not block.
func (c Config) Validate() error {
	var errs []error
	if c.SessionTimeout < MinSessionTimeout {
		errs = append(errs, &ConfigError{Field: "SessionTimeout", Value: c.SessionTimeout, Reason: "must be at least " + MinSessionTimeout.String()})
	}
	if c.LeaderRefresh < MinLeaderRefresh {
		errs = append(errs, &ConfigError{Field: "LeaderRefresh", Value: c.LeaderRefresh, Reason: "must be at least " + MinLeaderRefresh.String()})
	}
	if c.Debounce < 0 {
		errs = append(errs, &ConfigError{Field: "Debounce", Value: c.Debounce, Reason: "must not be negative"})
	}
	return errors.Join(errs...)
}

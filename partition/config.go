package partition

import (
	"fmt"
	"time"

	"github.com/zkgroup/zkgroup"
)

// Config configures every partition a consumer owns
// (manager.Config.Partition). NewConfig returns its defaults; Validate
// checks it.
type Config struct {
	// MaxUnacked bounds the messages handed out and not yet acked, per
	// partition (default 10,000). When reached, the partition stops
	// handing out messages until acks arrive; other partitions go on.
	MaxUnacked int
	// CommitInterval is how often acked offsets are committed, for every
	// owned partition in one request (default 5 s, as Kafka's Java consumer
	// and franz-go). It bounds what a member that crashes leaves
	// uncommitted, to be read again by the next owner; a rebalance or
	// Close commits what was acked whatever it is. Each interval costs
	// the group's coordinator an offset record per owned partition that
	// moved.
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
	Initial Initial
	// RetryBackoff is about the first wait after a failed read of the
	// committed offset or fetch start (default 100 ms); the waits grow
	// exponentially up to RetryBackoffMax (default 5 s), jittered so that
	// the partitions of a consumer do not retry in lockstep.
	RetryBackoff    time.Duration
	RetryBackoffMax time.Duration
}

// Initial is where a partition without a usable committed offset starts
// (Config.Initial).
type Initial string

// Initial positions.
const (
	InitialOldest Initial = "oldest" // the oldest message the log still holds
	InitialNewest Initial = "newest" // the next message produced
)

// NewConfig returns the defaults: 10,000 unacked messages per partition,
// commits every 5 s, a 10 s drain and a 10 s commit timeout, the
// oldest message as initial position, retries from 100 ms up to 5 s apart.
func NewConfig() Config {
	return Config{
		MaxUnacked:      10000,
		CommitInterval:  5 * time.Second,
		DrainTimeout:    10 * time.Second,
		CommitTimeout:   10 * time.Second,
		Initial:         InitialOldest,
		RetryBackoff:    100 * time.Millisecond,
		RetryBackoffMax: 5 * time.Second,
	}
}

// Validate checks every field. The error wraps zkgroup.ErrConfig (the
// value manager.ErrConfig is) and names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.MaxUnacked < 1:
		return fmt.Errorf("%w: MaxUnacked: %d is under 1", zkgroup.ErrConfig, c.MaxUnacked)
	case c.CommitInterval <= 0:
		return fmt.Errorf("%w: CommitInterval: %v is not positive", zkgroup.ErrConfig, c.CommitInterval)
	case c.DrainTimeout < 0:
		return fmt.Errorf("%w: DrainTimeout: %v is negative", zkgroup.ErrConfig, c.DrainTimeout)
	case c.CommitTimeout <= 0:
		return fmt.Errorf("%w: CommitTimeout: %v is not positive", zkgroup.ErrConfig, c.CommitTimeout)
	case c.Initial != InitialOldest && c.Initial != InitialNewest:
		return fmt.Errorf("%w: Initial: %q is neither %q nor %q", zkgroup.ErrConfig, c.Initial, InitialOldest, InitialNewest)
	case c.RetryBackoff <= 0:
		return fmt.Errorf("%w: RetryBackoff: %v is not positive", zkgroup.ErrConfig, c.RetryBackoff)
	case c.RetryBackoffMax < c.RetryBackoff:
		return fmt.Errorf("%w: RetryBackoffMax: %v is under RetryBackoff %v", zkgroup.ErrConfig, c.RetryBackoffMax, c.RetryBackoff)
	}
	return nil
}

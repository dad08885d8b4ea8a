package partition

import (
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup"
)

// ErrConfig reports an invalid Config; the message names the field. It is
// the module's one value for a bad config (zkgroup.ErrConfig).
var ErrConfig = zkgroup.ErrConfig

// Initial positions, when a partition has no committed offset or its
// committed offset is out of range.
const (
	Oldest = "oldest"
	Newest = "newest"
)

// Config configures every partition manager of a consumer.
type Config struct {
	// MaxUnacked bounds the messages handed out and not yet acked, per
	// partition. When reached, the partition stops handing out messages
	// until acks arrive; other partitions go on.
	MaxUnacked int
	// CommitInterval is how often acked offsets are committed (by the
	// consumer's Committer, for all its partitions at once).
	CommitInterval time.Duration
	// DrainTimeout bounds how long Stop waits for outstanding acks before it
	// commits what was acked.
	DrainTimeout time.Duration
	// CommitTimeout bounds one commit: a Committer's batch, a final
	// commit and its verification, a read of the committed offset.
	CommitTimeout time.Duration
	// Initial is where to start without a committed offset, and where to
	// go when the committed offset is out of range: Oldest or Newest.
	Initial string
	// RetryBackoff is about the first wait after a failed read of the
	// committed offset or fetch start; the waits grow exponentially up to
	// RetryBackoffMax, jittered (internal/retry) so that the partitions of
	// a consumer do not retry in lockstep.
	RetryBackoff    time.Duration
	RetryBackoffMax time.Duration
}

// NewConfig returns the defaults: 10,000 unacked messages per partition,
// commits every second, a 10 s drain, oldest as initial position.
func NewConfig() Config {
	return Config{
		MaxUnacked:      10000,
		CommitInterval:  time.Second,
		DrainTimeout:    10 * time.Second,
		CommitTimeout:   10 * time.Second,
		Initial:         Oldest,
		RetryBackoff:    100 * time.Millisecond,
		RetryBackoffMax: 5 * time.Second,
	}
}

// Validate checks every field; the error names the first bad one.
func (c Config) Validate() error {
	switch {
	case c.MaxUnacked < 1:
		return fmt.Errorf("%w: MaxUnacked: %d is under 1", ErrConfig, c.MaxUnacked)
	case c.CommitInterval <= 0:
		return fmt.Errorf("%w: CommitInterval: %v is not positive", ErrConfig, c.CommitInterval)
	case c.DrainTimeout < 0:
		return fmt.Errorf("%w: DrainTimeout: %v is negative", ErrConfig, c.DrainTimeout)
	case c.CommitTimeout <= 0:
		return fmt.Errorf("%w: CommitTimeout: %v is not positive", ErrConfig, c.CommitTimeout)
	case c.Initial != Oldest && c.Initial != Newest:
		return fmt.Errorf("%w: Initial: %q is neither %q nor %q", ErrConfig, c.Initial, Oldest, Newest)
	case c.RetryBackoff <= 0:
		return fmt.Errorf("%w: RetryBackoff: %v is not positive", ErrConfig, c.RetryBackoff)
	case c.RetryBackoffMax < c.RetryBackoff:
		return fmt.Errorf("%w: RetryBackoffMax: %v is under RetryBackoff %v", ErrConfig, c.RetryBackoffMax, c.RetryBackoff)
	}
	return nil
}

// InitialOffset is where a partition without a committed offset starts:
// sarama.OffsetOldest or sarama.OffsetNewest, after Initial.
func (c Config) InitialOffset() int64 { return c.initialOffset() }

func (c Config) initialOffset() int64 {
	if c.Initial == Newest {
		return sarama.OffsetNewest
	}
	return sarama.OffsetOldest
}

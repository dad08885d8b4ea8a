package fetch

import (
	"errors"
	"fmt"
	"github.com/zkgroup/zkgroup"
	"time"

	"github.com/IBM/sarama"
)

// Errors. Take and Poll return ErrClosed, ErrOffsetOutOfRange and
// ErrMessageTooLarge wrapped (errors.Is matches); reports of transient
// trouble wrap ErrFetch and the cause.
var (
	// ErrConfig: a Config field or an argument is invalid (the message
	// names it): the module's one value for it, zkgroup.ErrConfig.
	ErrConfig = zkgroup.ErrConfig
	// ErrClosed: the Partition or the Fetcher was closed.
	ErrClosed = errors.New("fetch: closed")
	// ErrExists: the partition is already added (and not closed).
	ErrExists = errors.New("fetch: partition already added")
	// ErrOffsetOutOfRange: the broker does not have the fetch offset (below
	// its log start or above its end). The partition is no longer fetched
	// until SetOffset gives it a new offset: the caller applies its reset policy.
	ErrOffsetOutOfRange = errors.New("fetch: offset out of range")
	// ErrMessageTooLarge: a record batch does not fit in
	// Config.PartitionMaxBytesLimit. The partition is no longer fetched
	// until SetOffset (nothing is skipped silently).
	ErrMessageTooLarge = errors.New("fetch: record batch larger than the partition limit")
	// ErrFetch wraps a transient trouble reported to a partition (a leader
	// move, a broker connection lost, an unexpected broker error): the
	// partition keeps being fetched, from its new leader if it moved.
	ErrFetch = errors.New("fetch: transient fetch error")
)

// Config is how a Fetcher fetches. Start from NewConfig.
type Config struct {
	// MinBytes is the least a broker gathers before answering a fetch
	// (or MaxWait passes). Kafka's fetch.min.bytes.
	MinBytes int32
	// MaxWait is how long a broker may hold a fetch waiting for MinBytes
	// (long poll). Kafka's fetch.max.wait.ms.
	MaxWait time.Duration
	// PartitionMaxBytes is the most a fetch asks of one partition: Kafka's
	// max.partition.fetch.bytes. A record batch larger than this is still
	// read: the partition's size is grown (doubled) until it fits, and set
	// back once records come.
	PartitionMaxBytes int32
	// PartitionMaxBytesLimit caps that growth (0: no cap but the int32
	// range). A batch that does not fit in it stops the partition with
	// ErrMessageTooLarge.
	PartitionMaxBytesLimit int32
	// MaxResponseSize is the most one fetch response may hold over all
	// its partitions: Kafka's fetch.max.bytes (Fetch v3 and later).
	MaxResponseSize int32
	// Isolation is ReadUncommitted (everything up to the high watermark)
	// or ReadCommitted (up to the last stable offset, records of aborted
	// transactions dropped).
	Isolation sarama.IsolationLevel
	// PartitionBuffer is how many Records a partition holds for its
	// consumer before it is left out of fetch requests (at least 1). With
	// 2, the default, the next share is fetched while the consumer works
	// on one and another waits: a partition holds at most PartitionBuffer
	// responses' shares beside the one its consumer took.
	PartitionBuffer int
	// RetryBackoff is how long a partition waits before it is routed
	// again after its leader moved, could not be found, or its broker
	// failed (ConfigFromSarama takes sarama's Consumer.Retry.Backoff,
	// 2 s by default, as sarama's Consumer waits).
	RetryBackoff time.Duration
}

// NewConfig returns Kafka's consumer defaults: MinBytes 1, MaxWait
// 500 ms, PartitionMaxBytes 1 MiB (no growth limit), MaxResponseSize
// 50 MiB, read_uncommitted, PartitionBuffer 2, RetryBackoff 250 ms.
func NewConfig() Config {
	return Config{
		MinBytes:          1,
		MaxWait:           500 * time.Millisecond,
		PartitionMaxBytes: 1 << 20,
		MaxResponseSize:   50 << 20,
		Isolation:         sarama.ReadUncommitted,
		PartitionBuffer:   2,
		RetryBackoff:      250 * time.Millisecond,
	}
}

// ConfigFromSarama returns NewConfig with the fetch settings of a sarama
// consumer config: Consumer.Fetch.Min, .Default, .Max, .MaxBytes (when
// set), Consumer.MaxWaitTime, Consumer.IsolationLevel and
// Consumer.Retry.Backoff.
func ConfigFromSarama(c *sarama.Config) Config {
	cfg := NewConfig()
	cfg.MinBytes = c.Consumer.Fetch.Min
	cfg.PartitionMaxBytes = c.Consumer.Fetch.Default
	cfg.PartitionMaxBytesLimit = c.Consumer.Fetch.Max
	if c.Consumer.Fetch.MaxBytes > 0 {
		cfg.MaxResponseSize = c.Consumer.Fetch.MaxBytes
	}
	cfg.MaxWait = c.Consumer.MaxWaitTime
	cfg.Isolation = c.Consumer.IsolationLevel
	cfg.RetryBackoff = c.Consumer.Retry.Backoff
	return cfg
}

// Validate returns an error wrapping ErrConfig and naming the first
// invalid field.
func (c Config) Validate() error {
	switch {
	case c.MinBytes < 1:
		return fmt.Errorf("%w: MinBytes: %d is not positive", ErrConfig, c.MinBytes)
	case c.MaxWait < time.Millisecond:
		return fmt.Errorf("%w: MaxWait: %v is below 1 ms", ErrConfig, c.MaxWait)
	case c.PartitionMaxBytes < 1:
		return fmt.Errorf("%w: PartitionMaxBytes: %d is not positive", ErrConfig, c.PartitionMaxBytes)
	case c.PartitionMaxBytesLimit != 0 && c.PartitionMaxBytesLimit < c.PartitionMaxBytes:
		return fmt.Errorf("%w: PartitionMaxBytesLimit: %d is below PartitionMaxBytes %d", ErrConfig, c.PartitionMaxBytesLimit, c.PartitionMaxBytes)
	case c.MaxResponseSize < 1:
		return fmt.Errorf("%w: MaxResponseSize: %d is not positive", ErrConfig, c.MaxResponseSize)
	case c.Isolation != sarama.ReadUncommitted && c.Isolation != sarama.ReadCommitted:
		return fmt.Errorf("%w: Isolation: %d is neither ReadUncommitted nor ReadCommitted", ErrConfig, c.Isolation)
	case c.PartitionBuffer < 1:
		return fmt.Errorf("%w: PartitionBuffer: %d is below 1", ErrConfig, c.PartitionBuffer)
	case c.RetryBackoff <= 0:
		return fmt.Errorf("%w: RetryBackoff: %v is not positive", ErrConfig, c.RetryBackoff)
	}
	return nil
}

// requestVersion picks the Fetch request version for the client's Kafka
// version: 4 or later is needed for the isolation level (and record
// batches), 10 for zstd, 12 is the newest sarama speaks.
func requestVersion(v sarama.KafkaVersion) (int16, error) {
	switch {
	case v.IsAtLeast(sarama.V2_7_0_0):
		return 12, nil
	case v.IsAtLeast(sarama.V2_3_0_0):
		return 11, nil
	case v.IsAtLeast(sarama.V2_1_0_0):
		return 10, nil
	case v.IsAtLeast(sarama.V2_0_0_0):
		return 8, nil
	case v.IsAtLeast(sarama.V1_1_0_0):
		return 7, nil
	case v.IsAtLeast(sarama.V1_0_0_0):
		return 6, nil
	case v.IsAtLeast(sarama.V0_11_0_0):
		return 5, nil
	}
	return 0, fmt.Errorf("%w: the client's Kafka version %s is below 0.11.0 (Fetch v4, record batches)", ErrConfig, v)
}

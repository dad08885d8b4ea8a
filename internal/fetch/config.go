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
	ErrClosed = errors.New("fetch: fetcher closed")
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
	// ErrLogTruncated: the partition's log was truncated below the fetch
	// position (an unclean leader election: records the fetcher handed
	// over are not in the new leader's log). A *TruncationError says
	// where; it also matches ErrOffsetOutOfRange: the partition is no
	// longer fetched until SetOffset gives it a new offset (the caller's
	// reset policy). Detected with Fetch v12 (the client's Kafka version
	// 2.7 or later).
	ErrLogTruncated = zkgroup.ErrLogTruncated
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
	// IdleWait is the long poll of a broker loop whose partitions are all
	// idle: once four responses in a row brought nothing (no record, no
	// error, nothing left behind), its requests ask the broker to wait up
	// to IdleWait instead of MaxWait, so that an idle member sends about
	// one request per broker every IdleWait (kept under half of the
	// client's Net.ReadTimeout). Data still comes at
	// once (the broker answers as soon as MinBytes arrive). A change that
	// needs a request at once (Add, SetOffset, a take from a full buffer)
	// cuts such a long poll short: the loop closes its connection (the
	// broker drops the request) and asks again on a new one, with a full
	// fetch session request and MaxWait, so that a partition added after a
	// claim waits for neither. The first response with anything in it
	// brings MaxWait back. 0, or not above MaxWait: MaxWait always.
	IdleWait time.Duration
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
	// Sessions makes each broker loop fetch in a fetch session (KIP-227,
	// Fetch v7: the client's Kafka version 1.1 or later): after the first
	// request, each one names only the partitions whose position or size
	// changed, and each response only the partitions with records or
	// news, so that idle partitions cost nothing per fetch. On by
	// default; off, every request names every partition (as Kafka before
	// 1.1).
	Sessions bool
	// MaxSessionPartitions: a broker loop fetching more partitions than
	// this fetches without a session (closing the one it had), until it
	// fetches this many or fewer again; 0: no bound. A broker keeps a
	// session's partitions in a hash table keyed by topic name and
	// partition (Kafka's CachedPartition: 31 x partition + the name's
	// String hash), and moves each partition that returned records to the
	// end of it, one removal each. The topics of a group are often named
	// alike (t000..t099): their keys fall in one dense range, one long
	// probe run, and every removal shifts the run. One member fetching
	// 10,000 such partitions from 3 Kafka 3.9 brokers (Fetch v12, topic
	// names) brought them to a standstill within 20 s: fetch round trips
	// grew from 100 ms to 13 s, the brokers' request threads in
	// ImplicitLinkedHashCollection.reseat; without sessions it read every
	// partition. 1,000 by default. It bounds sessions that name topics by
	// name only: a request by topic id (Fetch v13, see topicids.go) keys
	// the broker's table by the topic's id, which spreads the keys.
	MaxSessionPartitions int
	// Rack is the client's rack (Kafka's client.rack; ConfigFromSarama
	// takes sarama's RackID), sent in fetches from the client's Kafka
	// version 2.3 on (Fetch v11): a leader whose brokers run a replica
	// selector (replica.selector.class) names the replica to fetch from
	// (one in this rack), and the partition is fetched from it until an
	// error there, ReplicaRecheck, or its broker failing sends it back to
	// the leader. Empty: fetch from leaders only.
	Rack string
	// ReplicaRecheck is how long a partition is fetched from the replica
	// its leader named before the leader is asked again
	// (ConfigFromSarama takes sarama's Metadata.RefreshFrequency when
	// set), and how long a replica whose broker failed is not used.
	ReplicaRecheck time.Duration
	// SaramaDecodes leaves the decoding of record batches to sarama's
	// decoder, as the fetcher did before it read them itself: for
	// comparisons. Off by default: each broker loop's connection takes
	// the records out of a fetch response before sarama reads it, and the
	// fetcher reads the batches straight from the response's bytes, each
	// record only when it is handed over (legacy message sets, magic 0
	// and 1, are still sarama's). Either way the connection merges the
	// entries of a topic a response names more than once (see doc.go).
	SaramaDecodes bool
}

// NewConfig returns Kafka's consumer defaults: MinBytes 1, MaxWait
// 500 ms (IdleWait 10 s), PartitionMaxBytes 1 MiB (no growth limit), MaxResponseSize
// 50 MiB, read_uncommitted, PartitionBuffer 2, RetryBackoff 250 ms,
// fetch sessions on up to 1,000 partitions a broker, no rack,
// ReplicaRecheck 5 minutes.
func NewConfig() Config {
	return Config{
		MinBytes:             1,
		MaxWait:              500 * time.Millisecond,
		IdleWait:             10 * time.Second,
		PartitionMaxBytes:    1 << 20,
		MaxResponseSize:      50 << 20,
		Isolation:            sarama.ReadUncommitted,
		PartitionBuffer:      2,
		RetryBackoff:         250 * time.Millisecond,
		Sessions:             true,
		MaxSessionPartitions: 1000,
		ReplicaRecheck:       5 * time.Minute,
	}
}

// ConfigFromSarama returns NewConfig with the fetch settings of a sarama
// consumer config: Consumer.Fetch.Min, .Default, .Max, .MaxBytes (when
// set), Consumer.MaxWaitTime, Consumer.IsolationLevel,
// Consumer.Retry.Backoff, RackID and Metadata.RefreshFrequency (when set,
// as ReplicaRecheck).
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
	cfg.Rack = c.RackID
	if c.Metadata.RefreshFrequency > 0 {
		cfg.ReplicaRecheck = c.Metadata.RefreshFrequency
	}
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
	case c.IdleWait < 0:
		return fmt.Errorf("%w: IdleWait: %v is negative", ErrConfig, c.IdleWait)
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
	case c.MaxSessionPartitions < 0:
		return fmt.Errorf("%w: MaxSessionPartitions: %d is negative", ErrConfig, c.MaxSessionPartitions)
	case c.Rack != "" && c.ReplicaRecheck <= 0:
		return fmt.Errorf("%w: ReplicaRecheck: %v is not positive", ErrConfig, c.ReplicaRecheck)
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

// TruncationError is the stop of a partition whose log was truncated
// below its fetch position: Offset was the position, the leader's log
// for Epoch (the epoch of the last batch fetched) ends at EndOffset,
// below it. Records from EndOffset to Offset that were handed over are
// not in the log any more (others may be there now). It matches
// ErrLogTruncated and ErrOffsetOutOfRange.
type TruncationError struct {
	Topic              string
	Partition          int32
	Offset, EndOffset  int64
	Epoch, LeaderEpoch int32 // the last fetched batch's epoch, the leader's epoch ending at EndOffset
}

func (e *TruncationError) Error() string {
	return fmt.Sprintf("%v: %s/%d: position %d, the log ends at %d (epoch %d, leader's epoch %d)",
		ErrLogTruncated, e.Topic, e.Partition, e.Offset, e.EndOffset, e.Epoch, e.LeaderEpoch)
}

// Unwrap returns ErrLogTruncated and ErrOffsetOutOfRange.
func (e *TruncationError) Unwrap() []error { return []error{ErrLogTruncated, ErrOffsetOutOfRange} }

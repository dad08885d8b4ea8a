package offsets

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zkgroup/zkgroup"
)

// Store holds a consumer group's committed offsets. Every offset a Store
// takes or returns is the next offset to read (Kafka's convention), not the
// last one processed. Implementations are safe for concurrent use.
//
// Writes are fenced by their context's deadline: a caller that may write
// only while it owns a partition (a lease) gives each write a deadline no
// later than the lease's end, and the store sends nothing after it
// (checked on the monotonic clock right before the bytes are written, so
// a process paused in between writes nothing when it wakes). KafkaStore
// also tears down the connection of a request unanswered at its deadline,
// with SO_LINGER 0, so that the kernel cannot deliver it later; such a
// write fails with ErrLeaseExpired. A write already on the wire before
// the deadline may still land; ZooKeeperStore's versioned writes never
// move an offset backwards whenever they land.
type Store interface {
	// Fetch returns the committed offset of a partition; ok is false when
	// nothing is committed. Errors wrap ErrFetchOffset (or ErrClosed).
	Fetch(ctx context.Context, topic string, partition int32) (next int64, ok bool, err error)

	// Commit stores next synchronously and durably: it returns nil only
	// after the store acknowledged the write and, where the store can check
	// (KafkaStore with KafkaConfig.Verify), read it back. It is meant for
	// single writes: a partition's final commit before its claim is
	// released, administrative tools. It never moves an offset backwards:
	// if next is below an offset this instance committed, it returns nil
	// without writing. Errors wrap ErrCommit (or ErrClosed) and name the
	// topic, partition and offset.
	Commit(ctx context.Context, topic string, partition int32, next int64) error

	// CommitBatch stores the offsets of several partitions, each as Commit
	// would (never backwards), in as few round trips as the store can: one
	// OffsetCommit request (KafkaStore), one multi transaction
	// (ZooKeeperStore). It is meant for the routine commits of many
	// partitions: what it wrote is read back only where a write failed.
	// It returns one error per entry, in batch order (nil: stored, or
	// skipped as below an offset this instance committed); an entry fails
	// alone, with an error like Commit's. A partition may appear once; a
	// repeated one fails with ErrConfig. Blocks until every entry is
	// done or ctx ends.
	CommitBatch(ctx context.Context, batch []Offset) []error

	// Reset stores next even when it is below the committed offset (an
	// administrative offset reset). Errors wrap ErrCommit (or ErrClosed).
	Reset(ctx context.Context, topic string, partition int32, next int64) error

	// Release tells the store that this instance stops managing the
	// partition, so that per-partition resources can be freed. It returns by
	// ctx's deadline even if the underlying client hangs. Releasing a
	// partition that is not managed is not an error; a later Fetch, Commit
	// or Reset manages it again.
	Release(ctx context.Context, topic string, partition int32) error

	// Close releases every partition and the store's own resources. It is
	// idempotent and blocks for a bounded time. After Close every other
	// method fails with ErrClosed. It does not close clients or
	// connections the caller passed in.
	Close() error
}

// TopicPartition names one partition of a topic. It is a plain value, safe
// for concurrent use.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns "topic/partition".
func (tp TopicPartition) String() string {
	return tp.Topic + "/" + strconv.FormatInt(int64(tp.Partition), 10)
}

// Offset is one entry of [Store.CommitBatch]: the next offset to read of a
// partition. It is a plain value, safe for concurrent use.
type Offset struct {
	TopicPartition
	Next int64
	// Token is the writer's fencing token (see FormatToken), stored with
	// the offset where the store can (KafkaStore); 0 for none.
	Token int64
}

// Sentinel errors of the stores, wrapped by the errors they return; test
// with errors.Is. They are read-only and safe for concurrent use.
var (
	// ErrCommit is wrapped by every failed Commit or Reset.
	ErrCommit = errors.New("offsets: commit failed")
	// ErrFetchOffset is wrapped by every failed Fetch (reading a committed
	// offset; fetching messages is partition.ErrFetch).
	ErrFetchOffset = errors.New("offsets: reading the committed offset failed")
	// ErrClosed is returned (wrapped) by every method of a closed store
	// except Close. It is zkgroup.ErrClosed (manager.ErrClosed is the
	// same value).
	ErrClosed = zkgroup.ErrClosed
	// ErrRelease is wrapped by a Release that could not finish in time.
	ErrRelease = errors.New("offsets: release failed")
	// ErrConfig is wrapped by errors about bad arguments or configuration
	// (empty names, negative offsets, zero timeouts). It is
	// zkgroup.ErrConfig, the module's one sentinel for that meaning
	// (manager.ErrConfig and subscription.ErrConfig are the same value).
	ErrConfig = zkgroup.ErrConfig
	// ErrLeaseExpired is wrapped by a write that was not sent, or was cut,
	// because its deadline passed: a write's ctx deadline is the end of the
	// lease under which the caller may write (see Store), and nothing is
	// written after it.
	ErrLeaseExpired = errors.New("offsets: write deadline (lease) passed")
)

// PartitionError is the error of one store operation on one partition. It
// unwraps to Err, which wraps ErrCommit, ErrFetchOffset, ErrRelease, ErrClosed or
// ErrConfig and the underlying cause. It is a plain value, safe for
// concurrent reads.
type PartitionError struct {
	Topic     string
	Partition int32
	Op        string // "fetch", "commit", "reset", "release"
	Err       error
}

// Error formats the error as "offsets: <op> "<topic>"/<partition>: <err>",
// dropping a leading "offsets: " from Err's text.
func (e *PartitionError) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = strings.TrimPrefix(e.Err.Error(), "offsets: ")
	}
	return fmt.Sprintf("offsets: %s %s/%d: %s", e.Op, strconv.Quote(e.Topic), e.Partition, msg)
}

// Unwrap returns Err.
func (e *PartitionError) Unwrap() error { return e.Err }

// partErr builds a *PartitionError.
func partErr(op, topic string, partition int32, err error) error {
	return &PartitionError{Topic: topic, Partition: partition, Op: op, Err: err}
}

// checkBatch validates the entries of a CommitBatch with check (which
// adds the store's own rules) and rejects repeated partitions. It returns
// the errors per entry (nil where valid) and how many are valid.
func checkBatch(batch []Offset, check func(topic string, partition int32, next int64) error) ([]error, int) {
	errs := make([]error, len(batch))
	seen := make(map[TopicPartition]struct{}, len(batch))
	valid := 0
	for i, o := range batch {
		err := check(o.Topic, o.Partition, o.Next)
		if err == nil {
			if _, dup := seen[o.TopicPartition]; dup {
				err = fmt.Errorf("%w: %s appears twice in one batch", ErrConfig, o.TopicPartition)
			}
			seen[o.TopicPartition] = struct{}{}
		}
		if err != nil {
			errs[i] = partErr("commit", o.Topic, o.Partition, err)
			continue
		}
		valid++
	}
	return errs, valid
}

// checkArgs validates the arguments shared by every store operation. next
// is ignored when negative and checkNext is false.
func checkArgs(topic string, partition int32, next int64, checkNext bool) error {
	switch {
	case topic == "":
		return fmt.Errorf("%w: topic is empty", ErrConfig)
	case partition < 0:
		return fmt.Errorf("%w: partition %d is negative", ErrConfig, partition)
	case checkNext && next < 0:
		return fmt.Errorf("%w: offset %d is negative", ErrConfig, next)
	}
	return nil
}

// writeDeadline returns an error wrapping ErrLeaseExpired once ctx's
// deadline has passed, read on the monotonic clock (not ctx.Err, which a
// timer sets, possibly late after a pause), and otherwise ctx.Err().
func writeDeadline(ctx context.Context) error {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return fmt.Errorf("%w: not writing after %v", ErrLeaseExpired, d.Format(time.RFC3339Nano))
	}
	return ctx.Err()
}

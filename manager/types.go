package manager

import (
	"github.com/zkgroup/zkgroup/internal/partition"
	"github.com/zkgroup/zkgroup/subscription"
)

// The types an embedder meets, so that the common loop needs this package
// alone. They are defined by the packages that implement them; these names
// are the same types.
type (
	// Message is one Kafka message handed out by a Consumer; Ack it (or
	// Consumer.Ack it) once processed. Safe for concurrent use.
	Message = partition.Message
	// Batch is a slice of one partition's messages (Config.Delivery =
	// DeliveryBatches), acked as a whole or up to an offset. Safe for
	// concurrent use.
	Batch = partition.Batch
	// AckResult says what an ack did.
	AckResult = partition.AckResult
	// PartitionStats is a snapshot of one owned partition (Stats.Partitions).
	PartitionStats = partition.Stats
	// PartitionConfig configures the partitions (Config.Partition).
	PartitionConfig = partition.Config
	// PartitionError is the error of one partition on Errors(): its topic,
	// partition and operation, unwrapping to the cause.
	PartitionError = partition.Error
	// Subscription is what a member consumes: static topics, or a
	// whitelist or blacklist pattern.
	Subscription = subscription.Subscription
)

// Ack results.
const (
	AckOK        = partition.AckOK        // counted; may advance the commit
	AckDuplicate = partition.AckDuplicate // acked already
	AckStale     = partition.AckStale     // its partition is no longer owned here: a no-op
	AckUnknown   = partition.AckUnknown   // no such handed-out offset
	AckInvalid   = partition.AckInvalid   // nil message
)

// Where a partition without a usable committed offset starts
// (PartitionConfig.Initial).
const (
	InitialOldest = partition.Oldest
	InitialNewest = partition.Newest
)

// Partition errors, wrapped by the *PartitionError values on Errors().
var (
	ErrFetch     = partition.ErrFetch
	ErrCommit    = partition.ErrCommit
	ErrLost      = partition.ErrLost
	ErrSuspended = partition.ErrSuspended
	ErrReset     = partition.ErrReset
	ErrStopped   = partition.ErrStopped
	ErrDrainLate = partition.ErrDrainLate
)

// Static subscribes to the named topics.
func Static(topics ...string) (*Subscription, error) { return subscription.Static(topics...) }

// Whitelist subscribes to every topic matching the regular expression.
func Whitelist(pattern string) (*Subscription, error) { return subscription.Whitelist(pattern) }

// Blacklist subscribes to every topic not matching the regular expression.
func Blacklist(pattern string) (*Subscription, error) { return subscription.Blacklist(pattern) }

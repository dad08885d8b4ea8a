package manager

import "github.com/zkgroup/zkgroup/partition"

// The per-partition types a Consumer hands out are package partition's;
// these are their names in this package (aliases: the same types).
type (
	// Message is one Kafka message handed out by a Consumer (see
	// partition.Message).
	Message = partition.Message
	// Batch is a run of one partition's messages handed out at once by
	// Poll or PartitionStream.Poll (see partition.Batch).
	Batch = partition.Batch
	// AckResult says what an ack did (see partition.AckResult).
	AckResult = partition.AckResult
	// PartitionStream is the stream of one owned partition, from
	// EachPartition (see partition.Stream).
	PartitionStream = partition.Stream
	// PartitionConfig configures the partitions a consumer owns
	// (Config.Partition; see partition.Config).
	PartitionConfig = partition.Config
	// PartitionStats is a snapshot of one owned partition
	// (Stats.Partitions; see partition.Stats).
	PartitionStats = partition.Stats
	// PartitionError is the error of one partition, on Errors() or
	// returned by a call on it (see partition.Error).
	PartitionError = partition.Error
)

// Ack results (partition.AckOK, ...).
const (
	AckOK        = partition.AckOK
	AckDuplicate = partition.AckDuplicate
	AckStale     = partition.AckStale
	AckUnknown   = partition.AckUnknown
	AckInvalid   = partition.AckInvalid
)

// Where a partition without a usable committed offset starts
// (PartitionConfig.Initial; partition.InitialOldest, InitialNewest).
const (
	InitialOldest = partition.InitialOldest
	InitialNewest = partition.InitialNewest
)

// PartitionError.Op values (partition.OpFetch, ...; see there).
const (
	OpFetch   = partition.OpFetch
	OpCommit  = partition.OpCommit
	OpStart   = partition.OpStart
	OpReset   = partition.OpReset
	OpDrain   = partition.OpDrain
	OpSeek    = partition.OpSeek
	OpControl = partition.OpControl
)

// Partition errors, wrapped by the *PartitionError values on Errors() and
// returned by calls on a partition: package partition's values (see
// there), so that errors.Is matches either name.
var (
	ErrFetch     = partition.ErrFetch
	ErrCommit    = partition.ErrCommit // offsets.ErrCommit
	ErrLost      = partition.ErrLost
	ErrSuspended = partition.ErrSuspended
	ErrReset     = partition.ErrReset
	ErrStopped   = partition.ErrStopped
	ErrDrainLate = partition.ErrDrainLate
	ErrTruncated = partition.ErrTruncated
)

package manager

import (
	"sync/atomic"
	"time"

	"github.com/zkgroup/zkgroup/internal/partition"
)

// outputs is the consumer's part that owns what it hands the embedder:
// the batches (Each, Poll, Messages), the partition streams
// (EachPartition), the errors (Errors), and their counters. Nothing is
// sent on them once closeChannels ran.
type outputs struct {
	batches chan *partition.Handout // ModeMerged: every partition's batches
	// turns bounds the partitions that hand out on batches at once
	// (handOutTurns); ModeMerged only (nil otherwise).
	turns      *partition.Turns
	partitions chan *PartitionStream // ModePartitions only (nil otherwise)
	errors     chan error
	// ended is closed just before the channels are closed, once closeErr
	// is final (Err).
	ended chan struct{}
	fwd   forwarder // feeds Messages()

	droppedErrors atomic.Uint64 // errors Errors() had no room for
	// dropLogged: when a drop was last logged (monotonic nanoseconds
	// since born; 0: never).
	dropLogged atomic.Int64
	born       time.Time
	staleAcks  atomic.Uint64
}

// handOutTurns is how many partitions' fetch sessions run at once in
// ModeMerged (see partition.Turns): enough batches ready for the loop
// that takes them while the rest wait without a goroutine each.
const handOutTurns = 16

func newOutputs(cfg *Config) outputs {
	var partitions chan *PartitionStream
	var turns *partition.Turns
	if cfg.Mode == ModePartitions {
		partitions = make(chan *PartitionStream, 1024)
	} else {
		turns, _ = partition.NewTurns(handOutTurns) // a constant above 0: no error
	}
	return outputs{
		batches:    make(chan *partition.Handout),
		turns:      turns,
		partitions: partitions,
		errors:     make(chan error, cfg.ErrorsBufferSize),
		ended:      make(chan struct{}),
		born:       time.Now(),
	}
}

// closeChannels closes, in this order, Messages() (its forwarder ends once
// the batches are closed), then Errors() and the partition streams.
func (o *outputs) closeChannels() {
	close(o.ended)
	close(o.batches)
	o.fwd.stop()
	close(o.errors)
	if o.partitions != nil {
		close(o.partitions)
	}
}

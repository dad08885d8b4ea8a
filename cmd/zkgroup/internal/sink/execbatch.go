package sink

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"

	"github.com/zkgroup/zkgroup/manager"
)

// ExitPermanent is the exit status by which a command of an ExecBatch
// says that its input holds a record it will never take (sysexits.h's
// EX_DATAERR): the batch is not retried, and the handler delivers its
// messages one at a time to find that record, which the failure policy
// then skips, dead-letters or stops at. Any other non-zero status is
// retried as a whole batch. (The per-message Exec retries every non-zero
// status, as before.)
const ExitPermanent = 65

// ExecBatch runs a command per batch of one partition's messages: the
// messages on its stdin as JSON lines, exactly as the stdout sink writes
// them (see Record), in offset order, and ZKGROUP_TOPIC,
// ZKGROUP_PARTITION, ZKGROUP_FIRST_OFFSET, ZKGROUP_LAST_OFFSET,
// ZKGROUP_COUNT and ZKGROUP_FENCING_TOKEN describing the batch in its
// environment. Exit status 0
// acks the whole batch; ExitPermanent fails it permanently (the handler
// then falls back to Deliver, the command run with one line); any other
// status, and a kill after Timeout, are retried. Safe for concurrent use;
// DeliverBatch and Deliver block until the process exits, Timeout passes
// or ctx is done (then the process is killed).
type ExecBatch struct {
	e      *Exec
	limits BatchLimits
}

// NewExecBatch validates cfg and returns the batching sink; cfg.Batch are
// its BatchLimits and cfg.Timeout bounds one batch. Does not block.
func NewExecBatch(cfg ExecConfig) (*ExecBatch, error) {
	if err := checkLimits("exec", cfg.Batch); err != nil {
		return nil, err
	}
	e, err := NewExec(cfg)
	if err != nil {
		return nil, err
	}
	return &ExecBatch{e: e, limits: cfg.Batch}, nil
}

// BatchLimits returns the configured limits.
func (b *ExecBatch) BatchLimits() BatchLimits { return b.limits }

// BatchEnv returns the variables describing a batch, as its process sees
// them. msgs is not empty. Pure.
func BatchEnv(msgs []*manager.Message) []string {
	first, last := msgs[0], msgs[len(msgs)-1]
	return []string{
		"ZKGROUP_TOPIC=" + first.Topic,
		"ZKGROUP_PARTITION=" + strconv.FormatInt(int64(first.Partition), 10),
		"ZKGROUP_FIRST_OFFSET=" + strconv.FormatInt(first.Offset, 10),
		"ZKGROUP_LAST_OFFSET=" + strconv.FormatInt(last.Offset, 10),
		"ZKGROUP_COUNT=" + strconv.Itoa(len(msgs)),
		"ZKGROUP_FENCING_TOKEN=" + strconv.FormatInt(first.FencingToken(), 10),
	}
}

// DeliverBatch runs the command once for msgs. A message that cannot be
// encoded fails the batch permanently (Deliver then fails on it alone).
func (b *ExecBatch) DeliverBatch(ctx context.Context, msgs []*manager.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	where, stdin, err := batchBody("exec", msgs)
	if err != nil {
		return err
	}
	err = b.e.run(ctx, where, stdin, BatchEnv(msgs))
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == ExitPermanent {
		return Permanent(fmt.Errorf("%w (%d: a record the command will not take)", err, ExitPermanent))
	}
	return err
}

// Deliver runs the command for m alone: a one-line batch.
func (b *ExecBatch) Deliver(ctx context.Context, m *manager.Message) error {
	return b.DeliverBatch(ctx, []*manager.Message{m})
}

// Close does nothing: no process outlives DeliverBatch or Deliver.
func (b *ExecBatch) Close() error { return nil }

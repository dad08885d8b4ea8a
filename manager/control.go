package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkgroup/zkgroup/internal/partition"
)

// Poll returns the next batch of the merged stream (ModeMerged), waiting
// until one is fetched: nothing is handed out until asked. A batch is one
// partition's messages, in offset order, checked against its ownership's
// lease as a whole when handed out (Each checks before every message). It
// returns ErrMode in ModePartitions, ErrClosed once the consumer stopped,
// or ctx's error.
func (c *Consumer) Poll(ctx context.Context) (*Batch, error) {
	if c.cfg.Mode != ModeMerged {
		return nil, ErrMode
	}
	h, err := poll(ctx, c.batches)
	if err != nil {
		return nil, err
	}
	return &h.Batch, nil
}

func poll(ctx context.Context, ch <-chan *partition.Handout) (*partition.Handout, error) {
	select {
	case b, ok := <-ch:
		if !ok {
			return nil, ErrClosed
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Commit commits what is acked on every owned partition now, in one batch
// through the consumer's Committer (as a routine commit, without waiting
// for the interval), and returns once the store has it (Kafka answered the
// OffsetCommit, or ZooKeeper the transaction) or ctx ends. A partition
// that is being revoked is left to its final commit. The error joins one
// *PartitionError per partition that failed, or that had acks to commit
// while the ZooKeeper session was suspended (wrapping ErrLost).
// ErrClosed once the consumer is closing.
func (c *Consumer) Commit(ctx context.Context) error {
	if !c.t.Alive() {
		return ErrClosed
	}
	err := c.commits.Commit(ctx)
	if errors.Is(err, partition.ErrCommitterClosed) {
		return ErrClosed
	}
	return publicErr(err)
}

// owned returns the partition manager of tp, if tp is owned and fetching.
func (c *Consumer) owned(tp TopicPartition) (*partition.Manager, error) {
	if !c.t.Alive() {
		return nil, ErrClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sl := c.slots[tp]; sl != nil && sl.state == running {
		if pm := sl.pm.Load(); pm != nil {
			return pm, nil
		}
	}
	return nil, fmt.Errorf("%w: %s/%d", ErrNotOwned, tp.Topic, tp.Partition)
}

// Seek moves the position of the owned partition tp to offset (>= 0, or
// sarama.OffsetOldest / sarama.OffsetNewest) and returns once it is in
// effect: tp's next message handed out is the one at offset (an offset
// out of range is reset by Partition.Initial; what an Each loop kept of a
// batch from before is dropped). Messages of tp handed out
// before and not acked are forgotten (their acks are no-ops); the new
// position is committed at once, even below what was committed. The
// position holds for this ownership only: a revoke commits what is acked
// since. ErrNotOwned, ErrClosed, or ctx's error.
func (c *Consumer) Seek(ctx context.Context, tp TopicPartition, offset int64) error {
	pm, err := c.owned(tp)
	if err != nil {
		return err
	}
	return publicErr(pm.Seek(ctx, offset))
}

// SeekTime is Seek to the first message of tp whose timestamp is at or
// after t (the log end when there is none), found with Kafka's
// ListOffsets (sarama's Client.GetOffset with a timestamp).
func (c *Consumer) SeekTime(ctx context.Context, tp TopicPartition, t time.Time) error {
	pm, err := c.owned(tp)
	if err != nil {
		return err
	}
	return publicErr(pm.SeekTime(ctx, t))
}

// Pause stops fetching the owned partition tp without giving it up, and
// returns once no more batches of it are handed out (what was fetched and
// not handed out is fetched again on Resume). A batch of it that an Each
// loop already took is still yielded to the end (at most one batch per
// loop); use Seek to drop it. Acks, commits and a revoke's drain go on; a
// revoked and reclaimed partition starts unpaused.
func (c *Consumer) Pause(ctx context.Context, tp TopicPartition) error {
	pm, err := c.owned(tp)
	if err != nil {
		return err
	}
	return publicErr(pm.Pause(ctx))
}

// Resume fetches the paused partition tp again. It does not wait.
func (c *Consumer) Resume(tp TopicPartition) error {
	pm, err := c.owned(tp)
	if err != nil {
		return err
	}
	pm.Resume()
	return nil
}

package manager

import (
	"context"
	"iter"
	"time"

	"github.com/zkgroup/zkgroup/internal/partition"
)

// partStream is what a PartitionStream runs on: one ownership's batch
// channel, its partition manager, and what its Each loops left early.
type partStream struct {
	bch  chan *partition.Handout // closed by the partition manager once stopped
	pm   *partition.Manager
	rest leftovers
}

var _ partition.Source = (*partStream)(nil)

// EachPartition returns the per-partition loop (ModePartitions): a
// stream for each partition as it is claimed, to be consumed in a
// goroutine of its own:
//
//	for ps, err := range c.EachPartition(ctx) {
//		if err != nil {
//			return err // ErrMode: the consumer is in ModeMerged
//		}
//		go func() {
//			for msg := range ps.Each(ctx) {
//				process(msg)
//				msg.Ack()
//			}
//		}()
//	}
//
// A claimed partition is not fetched until its stream was taken (up to
// 1,024 streams wait to be taken). The loop ends when ctx ends or the
// consumer stopped; in ModeMerged it yields ErrMode once and ends.
func (c *Consumer) EachPartition(ctx context.Context) iter.Seq2[*PartitionStream, error] {
	if c.cfg.Mode != ModePartitions {
		return modeErr[*PartitionStream]()
	}
	return func(yield func(*PartitionStream, error) bool) {
		for {
			select {
			case s, ok := <-c.partitions:
				if !ok || !yield(s, nil) {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}
}

func (s *partStream) Poll(ctx context.Context) (*Batch, error) {
	h, err := poll(ctx, s.bch)
	if err != nil {
		return nil, err
	}
	return &h.Batch, nil
}

func (s *partStream) Commit(ctx context.Context) error { return publicErr(s.pm.Commit(ctx)) }

func (s *partStream) Seek(ctx context.Context, offset int64) error {
	return publicErr(s.pm.Seek(ctx, offset))
}

func (s *partStream) SeekTime(ctx context.Context, t time.Time) error {
	return publicErr(s.pm.SeekTime(ctx, t))
}

func (s *partStream) Pause(ctx context.Context) error { return publicErr(s.pm.Pause(ctx)) }

func (s *partStream) Resume() { s.pm.Resume() }

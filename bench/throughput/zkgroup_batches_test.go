package throughput

import (
	"context"
	"errors"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/manager"
)

func init() {
	extraSides = append(extraSides,
		sideSpec{"zkgroup-each", passZkgroupEach},
		sideSpec{"zkgroup-each-partitions", passZkgroupEachPartitions},
		sideSpec{"zkgroup-batches", passZkgroupBatches},
		sideSpec{"zkgroup-batches-partitions", passZkgroupBatchesPartitions},
		sideSpec{"zkgroup-merged-buf256", passZkgroupMergedBuffered},
		sideSpec{"zkgroup-partitions-buf256", passZkgroupPartitionsBuffered},
	)
}

// passZkgroupEach: the per-message loop of Consumer.Each (merged,
// DeliveryBatches), acking each message: one message at a time for the
// user, the unbuffered channel's guarantees per message.
func passZkgroupEach(env *passEnv, c *counter) error {
	cfg := zkgroupConfig()
	cfg.Delivery = manager.DeliveryBatches
	return runZkgroup(env, c, cfg, func(cons *manager.Consumer) {
		for m := range cons.Each(context.Background()) {
			c.add(m.Partition, m.Offset)
			m.Ack()
		}
	})
}

// passZkgroupEachPartitions: ModePartitions with DeliveryBatches, one
// goroutine per stream ranging over PartitionStream.Each, acking each
// message.
func passZkgroupEachPartitions(env *passEnv, c *counter) error {
	cfg := zkgroupConfig()
	cfg.Mode = manager.ModePartitions
	cfg.Delivery = manager.DeliveryBatches
	return runZkgroup(env, c, cfg, func(cons *manager.Consumer) {
		eachStream(cons, func(s *manager.PartitionStream) {
			for m := range s.Each(context.Background()) {
				c.add(m.Partition, m.Offset)
				m.Ack()
			}
		})
	})
}

// passZkgroupBatches: DeliveryBatches, Poll in a loop (merged), each
// batch acked as a whole.
func passZkgroupBatches(env *passEnv, c *counter) error {
	cfg := zkgroupConfig()
	cfg.Delivery = manager.DeliveryBatches
	var batches, messages int64
	err := runZkgroup(env, c, cfg, func(cons *manager.Consumer) {
		for {
			b, err := cons.Poll(context.Background())
			if err != nil {
				return // closed
			}
			batches++
			messages += int64(len(b.Messages))
			for _, m := range b.Messages {
				c.add(m.Partition, m.Offset)
			}
			b.Ack()
		}
	})
	if batches > 0 { // how much one hand-off carries: per-batch costs divide by it
		benchkit.Say("   zkgroup-batches: %d batches, %.1f messages per batch", batches, float64(messages)/float64(batches))
	}
	return err
}

// passZkgroupBatchesPartitions: ModePartitions with DeliveryBatches, one
// goroutine per stream ranging over its batches.
func passZkgroupBatchesPartitions(env *passEnv, c *counter) error {
	cfg := zkgroupConfig()
	cfg.Mode = manager.ModePartitions
	cfg.Delivery = manager.DeliveryBatches
	return runZkgroup(env, c, cfg, func(cons *manager.Consumer) {
		eachStream(cons, func(s *manager.PartitionStream) {
			for b := range s.Batches() {
				for _, m := range b.Messages {
					c.add(m.Partition, m.Offset)
				}
				b.Ack()
			}
		})
	})
}

// The buffered variants: the per-message sides with ChannelBufferSize =
// 256, to weigh the default (see Config.ChannelBufferSize).
func passZkgroupMergedBuffered(env *passEnv, c *counter) error {
	return withBuffer(256, func() error { return passZkgroupMerged(env, c) })
}

func passZkgroupPartitionsBuffered(env *passEnv, c *counter) error {
	return withBuffer(256, func() error { return passZkgroupPartitions(env, c) })
}

// bufferOverride, when set, is applied by zkgroupConfig's callers through
// configHook (passes run one at a time).
var bufferOverride = -1

func withBuffer(n int, pass func() error) error {
	if bufferOverride != -1 {
		return errors.New("nested buffer override")
	}
	bufferOverride = n
	defer func() { bufferOverride = -1 }()
	return pass()
}

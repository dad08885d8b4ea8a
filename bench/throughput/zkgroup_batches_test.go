package throughput

import (
	"context"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/manager"
)

func init() {
	extraSides = append(extraSides,
		sideSpec{"zkgroup-batches", passZkgroupBatches},
		sideSpec{"zkgroup-batches-partitions", passZkgroupBatchesPartitions},
		sideSpec{"zkgroup-batches-settle", passZkgroupBatchesSettle},
	)
}

// passZkgroupBatches: Poll in a loop (ModeMerged), each
// batch acked as a whole.
func passZkgroupBatches(env *passEnv, c *counter) error {
	return pollBatches(env, c, zkgroupConfig())
}

// passZkgroupBatchesSettle: passZkgroupBatches with a JoinSettle of
// 100 ms (the default before it became 0), to show what the settle costs
// a member that starts alone (it prefetches meanwhile).
func passZkgroupBatchesSettle(env *passEnv, c *counter) error {
	cfg := zkgroupConfig()
	cfg.JoinSettle = 100 * time.Millisecond
	return pollBatches(env, c, cfg)
}

// pollBatches joins with cfg and Polls in a loop, acking each batch as a
// whole.
func pollBatches(env *passEnv, c *counter, cfg *manager.Config) error {
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

// passZkgroupBatchesPartitions: ModePartitions, one
// goroutine per stream polling its batches.
func passZkgroupBatchesPartitions(env *passEnv, c *counter) error {
	cfg := zkgroupConfig()
	cfg.Mode = manager.ModePartitions
	return runZkgroup(env, c, cfg, func(cons *manager.Consumer) {
		eachStream(cons, func(s *manager.PartitionStream) {
			for {
				b, err := s.Poll(context.Background())
				if err != nil {
					return
				}
				for _, m := range b.Messages {
					c.add(m.Partition, m.Offset)
				}
				b.Ack()
			}
		})
	})
}

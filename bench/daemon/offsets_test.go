package daemon

import (
	"context"
	"time"

	"github.com/IBM/sarama"
)

// pollCommitted counts a side whose output the benchmark cannot see (the
// exec sink's children write to /dev/null) by the offsets its group
// committed: every `every` it sets p to the sum over the topic's
// partitions, until ctx ends. Failed requests (a coordinator still
// loading the new group) are tried again at the next tick. It returns
// when ctx ends.
func pollCommitted(ctx context.Context, admin sarama.ClusterAdmin, group, topic string, partitions int, p *progress, every time.Duration) {
	ps := make([]int32, partitions)
	for i := range ps {
		ps[i] = int32(i)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: ps})
		if err != nil || resp.Err != sarama.ErrNoError {
			continue
		}
		var sum int64
		for _, pt := range ps {
			if b := resp.GetBlock(topic, pt); b != nil && b.Err == sarama.ErrNoError && b.Offset > 0 {
				sum += b.Offset
			}
		}
		p.set(sum)
	}
}

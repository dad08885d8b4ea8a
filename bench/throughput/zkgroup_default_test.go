package throughput

import (
	"context"

	"github.com/zkgroup/zkgroup/manager"
)

func init() {
	extraSides = append(extraSides, sideSpec{"zkgroup-default", passZkgroupDefault})
}

// passZkgroupDefault is the loop the package doc shows first, with
// manager.NewConfig() as it comes: no Sarama config of ours (the
// library's own, Kafka version included), nothing tuned.
func passZkgroupDefault(env *passEnv, c *counter) error {
	return runZkgroup(env, c, manager.NewConfig(), func(cons *manager.Consumer) {
		for m, err := range cons.Each(context.Background()) {
			if err != nil {
				return
			}
			c.add(m.Partition, m.Offset)
			m.Ack()
		}
	})
}

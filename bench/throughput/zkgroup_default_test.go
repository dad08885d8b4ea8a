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
//
// Until the rework of issue 18 (batches become the only hand-off) the
// default is still DeliveryMessages; defaultDelivery stands in for the
// default it becomes. After the rework: delete defaultDelivery, and the
// loop's first line becomes
//
//	for m, err := range cons.Each(ctx) { if err != nil { return }
func passZkgroupDefault(env *passEnv, c *counter) error {
	cfg := manager.NewConfig()
	defaultDelivery(cfg)
	return runZkgroup(env, c, cfg, func(cons *manager.Consumer) {
		ctx := context.Background()
		for m := range cons.Each(ctx) {
			c.add(m.Partition, m.Offset)
			m.Ack()
		}
	})
}

// defaultDelivery sets what NewConfig's default becomes with issue 18.
func defaultDelivery(cfg *manager.Config) { cfg.Delivery = manager.DeliveryBatches }

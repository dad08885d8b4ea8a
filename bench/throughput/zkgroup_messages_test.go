package throughput

import (
	"github.com/zkgroup/zkgroup/manager"
)

func init() {
	extraSides = append(extraSides, sideSpec{"zkgroup-messages", passZkgroupMessages})
}

// passZkgroupMessages is the old consumers' shape: a range over
// Consumer.Messages() with manager.NewConfig() as it comes, acking each
// message through the consumer.
func passZkgroupMessages(env *passEnv, c *counter) error {
	return runZkgroup(env, c, manager.NewConfig(), func(cons *manager.Consumer) {
		for m := range cons.Messages() {
			c.add(m.Partition, m.Offset)
			cons.Ack(m)
		}
	})
}

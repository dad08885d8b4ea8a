package manager_test

import (
	"context"
	"log"
	"time"

	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// logRebalances sets rebalance callbacks that log each rebalance: one
// call per rebalance or loss, never two at once, with every partition
// that moved (by topic, sorted). OnRevoked runs after its partitions were
// drained and committed and before they are released; OnLost after lost
// partitions stopped, without drain or commit.
func logRebalances(cfg *manager.Config) {
	cfg.OnAssigned = func(ctx context.Context, c *manager.Consumer, parts map[string][]int32) {
		log.Printf("%s: assigned %v", c.ID(), parts) // e.g. load per-partition state
	}
	cfg.OnRevoked = func(ctx context.Context, c *manager.Consumer, parts map[string][]int32) {
		log.Printf("%s: revoked %v", c.ID(), parts) // e.g. flush per-partition state
	}
	cfg.OnLost = func(ctx context.Context, c *manager.Consumer, parts map[string][]int32) {
		log.Printf("%s: lost %v", c.ID(), parts) // another member may own them already: drop their state
	}
}

// Rebalance callbacks (logRebalances) on the consumer's loop (runMerged).
// No Output: it needs a cluster; TestExamples/callbacks runs both against
// the test cluster.
func ExampleConfig_rebalanceCallbacks() {
	sub, err := subscription.Static("orders")
	if err != nil {
		log.Fatal(err)
	}
	cfg := manager.NewConfig()
	logRebalances(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runMerged(ctx, "zk1:2181/kafka", "billing", sub, cfg); err != nil {
		log.Fatal(err)
	}
}

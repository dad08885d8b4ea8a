package manager_test

import (
	"context"
	"log"

	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// Rebalance callbacks: one call per rebalance or loss, never two at once,
// with every partition that moved (by topic, sorted). OnRevoked runs after
// its partitions were drained and committed and before they are released;
// OnLost after lost partitions stopped, without drain or commit.
func ExampleConfig_rebalanceCallbacks() {
	sub, err := subscription.Static("orders")
	if err != nil {
		log.Fatal(err)
	}
	cfg := manager.NewConfig()
	cfg.OnAssigned = func(ctx context.Context, c *manager.Consumer, parts map[string][]int32) {
		log.Printf("%s: assigned %v", c.ID(), parts) // e.g. load per-partition state
	}
	cfg.OnRevoked = func(ctx context.Context, c *manager.Consumer, parts map[string][]int32) {
		log.Printf("%s: revoked %v", c.ID(), parts) // e.g. flush per-partition state
	}
	cfg.OnLost = func(ctx context.Context, c *manager.Consumer, parts map[string][]int32) {
		log.Printf("%s: lost %v", c.ID(), parts) // another member may own them already: drop their state
	}
	c, err := manager.Join(context.Background(), "billing", sub, "zk1:2181/kafka", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// ... consume as in ExampleJoin.
}

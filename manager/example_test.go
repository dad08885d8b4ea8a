package manager_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/zkgroup/zkgroup/manager"
)

// The first loop: join a group, process and ack every message, and stop
// on SIGINT or SIGTERM. runMerged (example_api_test.go) is the loop: it
// ends with ctx, and Close then drains (waits for the acks of what was
// handed out, bounded by Partition.DrainTimeout), commits, releases every
// partition and leaves the group; the program then exits 0. No Output:
// it needs a cluster; TestExamples/merged runs runMerged against the test
// cluster.
func ExampleJoin() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sub, err := manager.Static("orders")
	if err != nil {
		log.Fatal(err)
	}
	if err := runMerged(ctx, "zk1:2181,zk2:2181/kafka", "billing", sub, manager.NewConfig()); err != nil {
		log.Fatal(err)
	}
}

// Per-partition streams: one goroutine per owned partition, so that a slow
// partition holds up only itself; runPartitions (example_api_test.go) is
// the loop. No Output: it needs a cluster; TestExamples/partitions runs
// runPartitions against the test cluster.
func ExampleConsumer_EachPartition() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sub, err := manager.Whitelist("orders-.*")
	if err != nil {
		log.Fatal(err)
	}
	if err := runPartitions(ctx, "zk1:2181/kafka", "billing", sub, manager.NewConfig()); err != nil {
		log.Fatal(err)
	}
}

// A config is checked before anything is written to ZooKeeper.
func ExampleConfig_Validate() {
	cfg := manager.NewConfig()
	cfg.Strategy = nil
	fmt.Println(cfg.Validate() != nil)
	// Output: true
}

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
// on SIGINT or SIGTERM. Close drains (waits for the acks of what was
// handed out, bounded by Partition.DrainTimeout), commits, releases every
// partition and leaves the group; the program then exits 0.
func ExampleJoin() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sub, err := manager.Static("orders")
	if err != nil {
		log.Fatal(err)
	}
	c, err := manager.Join(ctx, "billing", sub, "zk1:2181,zk2:2181/kafka", nil)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		for err := range c.Errors() { // closed once the consumer stopped
			log.Print(err)
		}
	}()
	for msg, err := range c.Each(ctx) { // ends on the signal
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s/%d@%d: %s\n", msg.Topic, msg.Partition, msg.Offset, msg.Value)
		msg.Ack()
	}
	if err := c.Close(); err != nil {
		log.Fatal(err)
	}
}

// Per-partition streams: one goroutine per owned partition, so that a slow
// partition holds up only itself.
func ExampleConsumer_EachPartition() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sub, _ := manager.Whitelist("orders-.*")
	cfg := manager.NewConfig()
	cfg.Mode = manager.ModePartitions
	c, err := manager.Join(ctx, "billing", sub, "zk1:2181/kafka", cfg)
	if err != nil {
		log.Fatal(err)
	}
	for ps, err := range c.EachPartition(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			for msg := range ps.Each(ctx) { // ends when the partition is revoked
				msg.Ack()
			}
		}()
	}
	if err := c.Close(); err != nil {
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

package manager_test

import (
	"context"
	"fmt"
	"github.com/zkgroup/zkgroup/manager/assign"
	"log"

	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// Join a group, consume and ack. Close drains, commits and releases.
func ExampleJoin() {
	sub, err := subscription.Static("orders")
	if err != nil {
		log.Fatal(err)
	}
	cfg := manager.NewConfig()
	cfg.Strategy = assign.Sticky()
	c, err := manager.Join(context.Background(), "billing", sub, "zk1:2181,zk2:2181/kafka", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	go func() {
		for err := range c.Errors() {
			log.Print(err)
		}
	}()
	for msg := range c.Messages() {
		fmt.Printf("%s/%d@%d: %s\n", msg.Topic, msg.Partition, msg.Offset, msg.Value)
		c.Ack(msg)
	}
}

// Per-partition streams: one goroutine per owned partition.
func ExampleConsumer_Partitions() {
	sub, _ := subscription.Whitelist("orders-.*")
	cfg := manager.NewConfig()
	cfg.Mode = manager.ModePartitions
	c, err := manager.Join(context.Background(), "billing", sub, "zk1:2181/kafka", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for stream := range c.Partitions() {
		go func() {
			for msg := range stream.Messages() { // closed when the partition is revoked
				c.Ack(msg)
			}
		}()
	}
}

// A config is checked before anything is written to ZooKeeper.
func ExampleConfig_Validate() {
	cfg := manager.NewConfig()
	cfg.Strategy = nil
	fmt.Println(cfg.Validate() != nil)
	// Output: true
}

package manager_test

import (
	"context"
	"errors"
	"log"
	"sync"
	"time"

	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// The examples' loops: the examples run against a cluster, so they have
// no Output; TestExamples runs these functions (runMerged, runPartitions,
// runBatches, and runMessages of example_messages_test.go) against the
// test cluster.

// process stands for the user's work on one message.
var process = func(*manager.Message) error { return nil }

// printErrors logs c's errors until c stopped (Errors is closed then).
func printErrors(c *manager.Consumer) {
	for err := range c.Errors() {
		log.Print(err)
	}
}

// runMerged: the consumer's loop over every owned partition; ack after
// processing. It returns when ctx ends, after Close (drained, committed,
// released).
func runMerged(ctx context.Context, zk, group string, sub *subscription.Subscription, cfg *manager.Config) error {
	c, err := manager.Join(ctx, group, sub, zk, cfg)
	if err != nil {
		return err
	}
	go printErrors(c)
	for msg, err := range c.Each(ctx) {
		if err != nil {
			_ = c.Close()
			return err
		}
		if err := process(msg); err != nil {
			msg.Abandon() // delivered again to the next owner
			continue
		}
		msg.Ack()
	}
	return c.Close()
}

// runPartitions: one goroutine per owned partition; a stream's loop ends
// when its partition is revoked.
func runPartitions(ctx context.Context, zk, group string, sub *subscription.Subscription, cfg *manager.Config) error {
	cfg.Mode = manager.ModePartitions
	c, err := manager.Join(ctx, group, sub, zk, cfg)
	if err != nil {
		return err
	}
	go printErrors(c)
	var wg sync.WaitGroup
	for stream, err := range c.EachPartition(ctx) { // ends with ctx
		if err != nil {
			_ = c.Close()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for msg := range stream.Each(ctx) {
				if process(msg) == nil {
					msg.Ack()
				}
			}
		}()
	}
	wg.Wait()
	return c.Close()
}

// runBatches: a slice of one partition's messages per Poll, acked as a
// whole; Commit(ctx) makes what was acked durable now (e.g. before
// telling a downstream system it was done).
func runBatches(ctx context.Context, zk, group string, sub *subscription.Subscription, cfg *manager.Config) error {
	c, err := manager.Join(ctx, group, sub, zk, cfg)
	if err != nil {
		return err
	}
	go printErrors(c)
	for {
		b, err := c.Poll(ctx)
		if err != nil {
			break // ctx ended (or the consumer closed)
		}
		for _, msg := range b.Messages {
			_ = process(msg)
		}
		b.Ack()
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = c.Commit(cctx)
		cancel()
		if err != nil && !errors.Is(err, manager.ErrClosed) {
			log.Print("commit: ", err)
		}
	}
	return c.Close()
}

// Batches with Poll, Ack and Commit(ctx). No Output: it needs a cluster;
// TestExamples/batches runs runBatches against the test cluster.
func Example_batches() {
	sub, _ := subscription.Static("orders")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runBatches(ctx, "zk1:2181/kafka", "billing", sub, manager.NewConfig()); err != nil {
		log.Fatal(err)
	}
}

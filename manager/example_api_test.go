package manager_test

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/zkgroup/zkgroup/internal/partition"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// The examples below run against a cluster, so they have no Output; the
// same functions (runMerged, runPartitions, runBatches, runEach, runGraceful) are
// run against the test cluster by TestExamples.

// process stands for the user's work on one message.
var process = func(*partition.Message) error { return nil }

// runMerged: every owned partition on one channel; ack after processing.
// It returns when ctx ends, after Close (drained, committed, released).
func runMerged(ctx context.Context, zk, group string, sub *subscription.Subscription, cfg *manager.Config) error {
	c, err := manager.Join(ctx, group, sub, zk, cfg)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); c.Interrupt() }() // the range below then ends
	go func() {
		for err := range c.Errors() {
			log.Print(err)
		}
	}()
	for msg := range c.Messages() {
		if err := process(msg); err != nil {
			msg.Abandon() // delivered again to the next owner
			continue
		}
		c.Ack(msg)
	}
	return c.Close()
}

// runPartitions: one goroutine per owned partition; a stream's channel is
// closed when its partition is revoked.
func runPartitions(ctx context.Context, zk, group string, sub *subscription.Subscription, cfg *manager.Config) error {
	cfg.Mode = manager.ModePartitions
	c, err := manager.Join(ctx, group, sub, zk, cfg)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); c.Interrupt() }()
	go func() {
		for err := range c.Errors() {
			log.Print(err)
		}
	}()
	var wg sync.WaitGroup
	for stream := range c.Partitions() { // closed once the consumer stopped
		wg.Add(1)
		go func() {
			defer wg.Done()
			for msg := range stream.Messages() {
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
	cfg.Delivery = manager.DeliveryBatches
	c, err := manager.Join(ctx, group, sub, zk, cfg)
	if err != nil {
		return err
	}
	go func() {
		for err := range c.Errors() {
			log.Print(err)
		}
	}()
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

// runEach: one message at a time in a range loop, fetched and handed over
// in batches (DeliveryBatches): the per-message loop of Messages() at the
// cost of the batch API. The loop ends when ctx ends.
func runEach(ctx context.Context, zk, group string, sub *subscription.Subscription, cfg *manager.Config) error {
	cfg.Delivery = manager.DeliveryBatches
	c, err := manager.Join(ctx, group, sub, zk, cfg)
	if err != nil {
		return err
	}
	go func() {
		for err := range c.Errors() {
			log.Print(err)
		}
	}()
	for msg := range c.Each(ctx) {
		if err := process(msg); err != nil {
			msg.Abandon()
			continue
		}
		msg.Ack()
	}
	return c.Close()
}

// runGraceful: stop on SIGINT/SIGTERM; Close drains (waits for the acks of
// what was received, bounded by Partition.DrainTimeout and CloseTimeout),
// commits and releases every partition.
func runGraceful(zk, group string, sub *subscription.Subscription, cfg *manager.Config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runMerged(ctx, zk, group, sub, cfg)
}

// The merged stream, ended by a context.
func Example_merged() {
	sub, _ := subscription.Static("orders")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runMerged(ctx, "zk1:2181/kafka", "billing", sub, manager.NewConfig()); err != nil {
		log.Fatal(err)
	}
}

// Per-partition workers.
func Example_partitionWorkers() {
	sub, _ := subscription.Static("orders")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runPartitions(ctx, "zk1:2181/kafka", "billing", sub, manager.NewConfig()); err != nil {
		log.Fatal(err)
	}
}

// Batches with Poll, Ack and Commit(ctx).
func Example_batches() {
	sub, _ := subscription.Static("orders")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runBatches(ctx, "zk1:2181/kafka", "billing", sub, manager.NewConfig()); err != nil {
		log.Fatal(err)
	}
}

// One message at a time, handed over in batches.
func Example_each() {
	sub, _ := subscription.Static("orders")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runEach(ctx, "zk1:2181/kafka", "billing", sub, manager.NewConfig()); err != nil {
		log.Fatal(err)
	}
}

// Graceful shutdown on a signal.
func Example_gracefulShutdown() {
	sub, _ := subscription.Static("orders")
	if err := runGraceful("zk1:2181/kafka", "billing", sub, manager.NewConfig()); err != nil {
		log.Fatal(err)
	}
}

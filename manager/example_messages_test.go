package manager_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// runMessages: the old ZooKeeper consumers' shape, one select over the
// messages, the errors, a ticker and a shutdown signal (ctx). On the
// signal it interrupts the consumer and goes on receiving and acking
// until Messages is closed: the drains wait for the acks of what was
// received, so a clean stop delivers nothing twice. TestExamples runs it.
func runMessages(ctx context.Context, zk, group string, sub *subscription.Subscription, cfg *manager.Config) error {
	c, err := manager.Join(ctx, group, sub, zk, cfg)
	if err != nil {
		return err
	}
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	shutdown := ctx.Done()
	msgs, errs := c.Messages(), c.Errors()
	for msgs != nil {
		select {
		case msg, ok := <-msgs:
			if !ok {
				msgs = nil // closed once every partition was drained and committed
				continue
			}
			if err := process(msg); err != nil {
				msg.Abandon() // delivered again to the next owner
				continue
			}
			c.Ack(msg)
		case err, ok := <-errs:
			if !ok {
				errs = nil // closed after Messages
				continue
			}
			log.Print(err)
		case <-tick.C:
			s := c.Stats()
			log.Printf("%d partitions, %d messages delivered", len(s.Partitions), s.Delivered)
		case <-shutdown:
			shutdown = nil
			c.Interrupt() // drain, commit, release; Messages is closed at the end
		}
	}
	if err := c.Err(); err != nil { // a failure stopped the consumer
		_ = c.Close()
		return err
	}
	return c.Close()
}

// Messages, Errors and a shutdown signal in one select, as programs
// written for the old ZooKeeper consumers (kafkaconsumer) are. On SIGINT
// or SIGTERM the consumer drains, commits, releases its partitions and
// leaves; the program then exits 0. No Output: it needs a cluster;
// TestExamples/messages runs runMessages against the test cluster.
func ExampleConsumer_Messages() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sub, err := subscription.Static("orders")
	if err != nil {
		log.Fatal(err)
	}
	if err := runMessages(ctx, "zk1:2181,zk2:2181/kafka", "billing", sub, manager.NewConfig()); err != nil {
		log.Fatal(err)
	}
}

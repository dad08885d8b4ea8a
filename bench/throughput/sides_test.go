package throughput

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// passEnv is what one pass gets: the cluster, the topic, and a group name
// of its own, so that every pass reads from the oldest offset.
type passEnv struct {
	c     *testcluster.Cluster
	topic string
	sub   *subscription.Subscription
	group string
}

// sideSpec is one way of reading the topic through. pass calls c.start()
// right before it joins, c.add for every message once it was processed
// (acked, marked), and returns once c.done is closed and it has left the
// group (closing is not timed).
type sideSpec struct {
	name string
	pass func(env *passEnv, c *counter) error
}

// builtinSides are run in this order in the first round.
var builtinSides = []sideSpec{
	{"zkgroup-each", passZkgroupEach},
	{"zkgroup-partitions", passZkgroupPartitions},
	{"sarama", passSarama},
	{"franz-go", passFranz},
}

// extraSides are added by other files of this package, each from an
// init function; they run after the built-in ones. This is the slot of
// "zkgroup batches" (see ../README.md).
var extraSides []sideSpec

// waitTimeout bounds a whole pass.
const waitTimeout = 5 * time.Minute

// awaitDone waits for the pass to complete, or fails after waitTimeout.
func awaitDone(c *counter) error {
	select {
	case <-c.done:
		return nil
	case <-time.After(waitTimeout):
		return fmt.Errorf("%d of %d messages within %v (%d out of order or repeated)", c.total.Load(), c.want, waitTimeout, c.bad.Load())
	}
}

// zkgroupConfig is the library's defaults (commits every 5 s, oldest
// offset first) with Kafka 3.9 set in sarama's config, as on the other
// sarama side.
func zkgroupConfig() *manager.Config {
	cfg := manager.NewConfig()
	sc := sarama.NewConfig()
	sc.Version = sarama.V3_9_0_0
	sc.ClientID = "bench-zkgroup"
	cfg.Sarama = sc
	return cfg
}

// drainErrors reads a consumer's Errors() and keeps the first.
func drainErrors(errs <-chan error) (first func() error) {
	var mu sync.Mutex
	var err error
	go func() {
		for e := range errs {
			mu.Lock()
			if err == nil {
				err = e
			}
			mu.Unlock()
		}
	}()
	return func() error { mu.Lock(); defer mu.Unlock(); return err }
}

// runZkgroup joins with cfg, runs read over the consumer in a goroutine
// of its own until every message was counted, closes the consumer and
// waits for read to return (it must end when the consumer's channels
// close).
func runZkgroup(env *passEnv, c *counter, cfg *manager.Config, read func(cons *manager.Consumer)) error {
	if *flagZkLog != "" {
		f, err := os.OpenFile(*flagZkLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.Logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c.start()
	cons, err := manager.Join(context.Background(), env.group, env.sub, env.c.ZooKeeperConnect(), cfg)
	if err != nil {
		return err
	}
	firstErr := drainErrors(cons.Errors())
	done := make(chan struct{})
	go func() { defer close(done); read(cons) }()
	err = awaitDone(c)
	if cerr := cons.Close(); err == nil {
		err = cerr
	}
	<-done
	if err == nil {
		err = firstErr()
	}
	return err
}

// eachStream runs per on every partition stream, one goroutine each, and
// returns once EachPartition ended (the consumer closed) and every
// stream's goroutine ended.
func eachStream(cons *manager.Consumer, per func(s *manager.PartitionStream)) {
	var wg sync.WaitGroup
	for s, err := range cons.EachPartition(context.Background()) {
		if err != nil {
			break
		}
		wg.Add(1)
		go func() { defer wg.Done(); per(s) }()
	}
	wg.Wait()
}

// passZkgroupEach: the consumer's loop (Each), acking each message, with
// Kafka 3.9 set as on the sarama side.
func passZkgroupEach(env *passEnv, c *counter) error {
	return runZkgroup(env, c, zkgroupConfig(), func(cons *manager.Consumer) {
		for m, err := range cons.Each(context.Background()) {
			if err != nil {
				return
			}
			c.add(m.Partition, m.Offset)
			m.Ack()
		}
	})
}

// passZkgroupPartitions: Config.Mode = ModePartitions, one goroutine per
// partition stream, Ack each message.
func passZkgroupPartitions(env *passEnv, c *counter) error {
	cfg := zkgroupConfig()
	cfg.Mode = manager.ModePartitions
	return runZkgroup(env, c, cfg, func(cons *manager.Consumer) {
		eachStream(cons, func(s *manager.PartitionStream) {
			for m := range s.Each(context.Background()) {
				c.add(m.Partition, m.Offset)
				m.Ack()
			}
		})
	})
}

// passSarama: sarama's ConsumerGroup as its docs show it: Consume in a
// loop, ConsumeClaim marking each message, autocommit, oldest offset first.
func passSarama(env *passEnv, c *counter) error {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.ClientID = "bench-sarama"
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.start()
	g, err := sarama.NewConsumerGroup(env.c.Addrs(), env.group, cfg)
	if err != nil {
		return err
	}
	firstErr := drainErrors(g.Errors())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h := claimCounter{c}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			err := g.Consume(ctx, []string{env.topic}, h)
			if errors.Is(err, sarama.ErrClosedConsumerGroup) {
				return
			}
			if err != nil {
				time.Sleep(100 * time.Millisecond) // no busy loop on a persistent error
			}
		}
	}()
	err = awaitDone(c)
	cancel()
	<-done
	if cerr := g.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = firstErr()
	}
	return err
}

type claimCounter struct{ c *counter }

func (claimCounter) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (claimCounter) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h claimCounter) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.c.add(m.Partition, m.Offset)
			sess.MarkMessage(m, "")
		case <-sess.Context().Done():
			return nil
		}
	}
}

// passFranz: franz-go's kgo client in a group, PollFetches in a loop with
// its default autocommit of polled records, from the start of the log.
func passFranz(env *passEnv, c *counter) error {
	c.start()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(env.c.Addrs()...),
		kgo.ClientID("bench-franz-go"),
		kgo.ConsumerGroup(env.group),
		kgo.ConsumeTopics(env.topic),
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var pollErr error
	for pollErr == nil {
		fetches := cl.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			pollErr = fmt.Errorf("poll: %v", errs)
			break
		}
		last := false
		fetches.EachRecord(func(r *kgo.Record) {
			if c.add(r.Partition, r.Offset) {
				last = true
			}
		})
		if last {
			break
		}
	}
	cl.Close() // commits what was polled and leaves the group
	return pollErr
}

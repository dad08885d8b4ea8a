package manager

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/offsetslink"
	"github.com/zkgroup/zkgroup/internal/partition"
	"github.com/zkgroup/zkgroup/offsets"
)

// The commit path runs one way, from the partitions to the store:
//
//	internal/partition (each Manager; the Committer's routine rounds)
//	  -> partitionStore (finalcommits.go: notes each final commit)
//	  -> kafkaBoundStore (reachability.go: with Kafka storage, bounds each
//	     request by Kafka's reachability)
//	  -> kafkaStore or zooKeeperStore (this file: package offsets' store)
//
// The consumer holds one handle, conns.store, the outermost layer it owns
// (kafkaBoundStore or the offsets store itself); nothing keeps the store
// underneath or unwraps a layer to reach it (a Manager looks for Reset on
// the store it is given, which every layer has). What the consumer needs
// of the offsets store beside requests (Stats' counters, the reachability
// evidence, the hold of the final commits at Close) are methods of store,
// which every layer passes on.

// store is what the consumer needs of an offsets store.
type store interface {
	partition.Store
	// Reset: a seek moves the committed offset, also backwards (the
	// partition managers look for it).
	Reset(ctx context.Context, topic string, partition int32, next int64) error
	Close() error
	// kafkaStats returns the Kafka offset store's counters; ok is false
	// with offsets in ZooKeeper.
	kafkaStats() (st offsets.KafkaStats, ok bool)
	// hold makes the Kafka offset store take no Commit or Reset into a
	// round until n of them were queued (offsets/kafka_hold.go); nil with
	// offsets in ZooKeeper, where each commit is its own transaction.
	hold(n int) offsetslink.Holder
}

// kafkaStore is the offsets store in Kafka.
type kafkaStore struct{ *offsets.KafkaStore }

func (s kafkaStore) kafkaStats() (offsets.KafkaStats, bool) { return s.Stats(), true }

func (s kafkaStore) hold(n int) offsetslink.Holder {
	if h, ok := offsetslink.Hold(s.KafkaStore, n); ok {
		return h
	}
	return nil
}

// zooKeeperStore is the offsets store in ZooKeeper.
type zooKeeperStore struct{ *offsets.ZooKeeperStore }

func (zooKeeperStore) kafkaStats() (offsets.KafkaStats, bool) { return offsets.KafkaStats{}, false }

func (zooKeeperStore) hold(int) offsetslink.Holder { return nil }

// openStore opens the offset store, bounds it by Kafka's reachability
// (newKafkaWatch) and makes the partitions' committer over it.
func (c *Consumer) openStore(brokers []string, scfg *sarama.Config, storeLog *slog.Logger) error {
	var st store
	switch c.cfg.OffsetStorage {
	case StorageZooKeeper:
		zs, err := offsets.NewZooKeeperStore(c.session, c.group, c.session.ACL())
		if err != nil {
			return fmt.Errorf("%w: offset store: %w", ErrJoin, err)
		}
		st = zooKeeperStore{zs}
	default:
		kc := offsets.NewKafkaConfig()
		kc.CommitTimeout = c.cfg.Partition.CommitTimeout
		ks, err := offsets.NewKafkaStore(c.offsetClient, c.group, kc, storeLog)
		if err != nil {
			return fmt.Errorf("%w: offset store: %w", ErrJoin, err)
		}
		st = kafkaStore{ks}
	}
	c.store = c.newKafkaWatch(brokers, scfg, st) // bounded by Kafka's reachability
	var err error
	if c.commits, err = partition.NewCommitter(c.store, c.cfg.Partition, c.log); err != nil {
		return fmt.Errorf("%w: committer: %w", ErrJoin, err)
	}
	return nil
}

var (
	_ store = kafkaStore{}
	_ store = zooKeeperStore{}
	_ store = kafkaBoundStore{}
	_ store = partitionStore{}
)

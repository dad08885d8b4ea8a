package manager

import (
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/metadata"
	"gopkg.in/tomb.v2"
)

// metaSource is where the consumer learns topics, partitions and leaders:
// ZooKeeper through kazoo-go (metadata.Watcher), or Kafka itself when
// ZooKeeper only coordinates (no /brokers in it; Config.Brokers set).
type metaSource interface {
	Snapshot() metadata.Snapshot
	Changes() <-chan struct{}
	Close() error
}

// kafkaMeta polls the Kafka cluster's metadata through a sarama client.
// Safe for concurrent use.
type kafkaMeta struct {
	client  sarama.Client
	filter  func(string) bool
	every   time.Duration
	log     *slog.Logger
	changes chan struct{}
	t       tomb.Tomb

	mu   sync.Mutex
	snap metadata.Snapshot
}

// newKafkaMeta reads the metadata once (blocking) and then every `every`.
func newKafkaMeta(client sarama.Client, filter func(string) bool, every time.Duration, log *slog.Logger) (*kafkaMeta, error) {
	k := &kafkaMeta{client: client, filter: filter, every: every, log: log, changes: make(chan struct{}, 1)}
	topics, err := k.read()
	if err != nil {
		return nil, err
	}
	k.snap = metadata.Snapshot{Topics: topics, Version: 1}
	k.t.Go(k.loop)
	return k, nil
}

func (k *kafkaMeta) read() (map[string][]metadata.Partition, error) {
	if err := k.client.RefreshMetadata(); err != nil {
		return nil, err
	}
	names, err := k.client.Topics()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]metadata.Partition, len(names))
	for _, t := range names {
		out[t] = nil
		if !k.filter(t) {
			continue
		}
		ids, err := k.client.Partitions(t)
		if err != nil {
			k.log.Warn("reading partitions failed", "topic", t, "err", err)
			continue
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		ps := make([]metadata.Partition, 0, len(ids))
		for _, id := range ids {
			p := metadata.Partition{Topic: t, ID: id, Leader: -1}
			if b, err := k.client.Leader(t, id); err == nil {
				p.Leader = b.ID()
			}
			p.Replicas, _ = k.client.Replicas(t, id)
			ps = append(ps, p)
		}
		out[t] = ps
	}
	return out, nil
}

func (k *kafkaMeta) loop() error {
	tick := time.NewTicker(k.every)
	defer tick.Stop()
	for {
		select {
		case <-k.t.Dying():
			return nil
		case <-tick.C:
		}
		topics, err := k.read()
		if err != nil {
			k.log.Warn("reading kafka metadata failed; keeping the last view", "err", err)
			continue
		}
		k.mu.Lock()
		changed := !reflect.DeepEqual(topics, k.snap.Topics)
		if changed {
			k.snap = metadata.Snapshot{Topics: topics, Version: k.snap.Version + 1}
		}
		k.mu.Unlock()
		if changed {
			select {
			case k.changes <- struct{}{}:
			default:
			}
		}
	}
}

// Snapshot returns the last view; the caller must not modify it.
func (k *kafkaMeta) Snapshot() metadata.Snapshot {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.snap
}

// Changes receives after the view changed (buffered 1).
func (k *kafkaMeta) Changes() <-chan struct{} { return k.changes }

// Close stops polling; idempotent.
func (k *kafkaMeta) Close() error {
	k.t.Kill(nil)
	return k.t.Wait()
}

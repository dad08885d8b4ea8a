package manager

import (
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/retry"
	"gopkg.in/tomb.v2"
)

// metaSource is where the consumer learns topics, partitions and their
// preferred leaders: ZooKeeper through the member's own session
// (metadata.Watcher), or Kafka itself when ZooKeeper only coordinates (no
// /brokers in it; Config.Brokers set). Either way a partition's Leader is its preferred leader (the first
// replica of its assignment), and Changes fires only when the topic set, a
// selected topic's partition count or its replica assignment changed: never
// on a live leader change.
type metaSource interface {
	Snapshot() metadata.Snapshot
	Changes() <-chan struct{}
	Close() error
}

// defaultKafkaMetaPoll is the mean poll interval of kafkaMeta when none is
// given. Kafka has no watches, so topics created and partitions added are
// seen within about this long (up to 1.5 times it, with jitter).
const defaultKafkaMetaPoll = 10 * time.Second

// kafkaMetaClient is the part of sarama.Client that kafkaMeta uses.
type kafkaMetaClient interface {
	RefreshMetadata(topics ...string) error
	Topics() ([]string, error)
	Partitions(topic string) ([]int32, error)
	Replicas(topic string, partitionID int32) ([]int32, error)
}

// kafkaMeta polls the Kafka cluster's metadata through a sarama client,
// every poll interval with ±50% jitter (retry.Jitter), so that the members
// of a group do not poll in step, and after a failed poll with a jittered
// exponential backoff. Each partition's Leader is its preferred leader,
// Replicas[0] of the metadata response; live leaders are ignored, so a
// broker restart is not a change. Its methods are safe for concurrent use.
type kafkaMeta struct {
	client  kafkaMetaClient
	filter  func(string) bool
	every   time.Duration
	log     *slog.Logger
	changes chan struct{}
	t       tomb.Tomb
	polls   atomic.Uint64 // polls finished, failed ones included (tests wait on it)

	mu   sync.Mutex
	snap metadata.Snapshot
}

// newKafkaMeta reads the metadata once (blocking on Kafka; it fails when
// that read fails) and then polls it every `every` on average (zero or
// negative: defaultKafkaMetaPoll) in a goroutine that Close stops. filter
// selects the topics whose partitions are read; nil selects all. log may
// be nil.
func newKafkaMeta(client kafkaMetaClient, filter func(string) bool, every time.Duration, log *slog.Logger) (*kafkaMeta, error) {
	if every <= 0 {
		every = defaultKafkaMetaPoll
	}
	if filter == nil {
		filter = func(string) bool { return true }
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &kafkaMeta{client: client, filter: filter, every: every, log: log, changes: make(chan struct{}, 1)}
	topics, err := k.read(nil)
	if err != nil {
		return nil, err
	}
	k.snap = metadata.Snapshot{Topics: topics, Version: 1}
	k.t.Go(k.loop)
	return k, nil
}

// read fetches the metadata of every topic and builds a view. A selected
// topic whose partitions cannot be read keeps its partitions from prev, so
// that a transient error is not a change.
func (k *kafkaMeta) read(prev map[string][]metadata.Partition) (map[string][]metadata.Partition, error) {
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
		ps, err := k.readTopic(t)
		if err != nil {
			k.log.Warn("reading a topic's partitions failed; keeping the last ones", "topic", t, "error", err)
			out[t] = prev[t]
			continue
		}
		out[t] = ps
	}
	return out, nil
}

// readTopic returns a topic's partitions from the client's metadata cache,
// sorted by ID, each led by its preferred leader.
func (k *kafkaMeta) readTopic(t string) ([]metadata.Partition, error) {
	ids, err := k.client.Partitions(t)
	if err != nil {
		return nil, err
	}
	ids = append([]int32(nil), ids...)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	ps := make([]metadata.Partition, 0, len(ids))
	for _, id := range ids {
		replicas, err := k.client.Replicas(t, id)
		if err != nil && !errors.Is(err, sarama.ErrReplicaNotAvailable) {
			return nil, err
		}
		// A replica being offline does not change the assignment.
		ps = append(ps, metadata.Partition{Topic: t, ID: id, Leader: metadata.PreferredLeader(replicas), Replicas: replicas})
	}
	return ps, nil
}

func (k *kafkaMeta) loop() error {
	poll := retry.New(k.every, k.every)
	backoff := retry.New(min(time.Second, k.every), k.every)
	timer := time.NewTimer(poll.Next())
	defer timer.Stop()
	failing := false
	for {
		select {
		case <-k.t.Dying():
			return nil
		case <-timer.C:
		}
		k.mu.Lock()
		prev := k.snap.Topics
		k.mu.Unlock()
		topics, err := k.read(prev)
		switch {
		case err != nil && !failing:
			k.log.Warn("reading kafka metadata failed; keeping the last view", "error", err)
		case err != nil:
			k.log.Debug("reading kafka metadata still fails", "error", err)
		case failing:
			k.log.Info("reading kafka metadata works again")
		}
		failing = err != nil
		if err != nil {
			timer.Reset(backoff.Next())
		} else {
			backoff.Reset()
			k.publish(topics)
			timer.Reset(poll.Next())
		}
		k.polls.Add(1)
	}
}

// publish installs topics as the new view and signals Changes if it differs
// from the current one in what drives rebalancing.
func (k *kafkaMeta) publish(topics map[string][]metadata.Partition) {
	k.mu.Lock()
	changed := !metadata.EqualTopics(k.snap.Topics, topics)
	if changed {
		k.snap = metadata.Snapshot{Topics: topics, Version: k.snap.Version + 1}
	}
	version := k.snap.Version
	k.mu.Unlock()
	if changed {
		k.log.Info("kafka metadata changed", "version", version)
		select {
		case k.changes <- struct{}{}:
		default:
		}
	}
}

// Snapshot returns the last view without blocking; the caller must not
// modify it (it is shared with other callers).
func (k *kafkaMeta) Snapshot() metadata.Snapshot {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.snap
}

// Changes receives after the view changed: a topic added or removed, or a
// selected topic's partition count or replica assignment changed (buffered
// 1, never closed). Live leader changes are not changes.
func (k *kafkaMeta) Changes() <-chan struct{} { return k.changes }

// Close stops polling and waits for the poller, which may be in the middle
// of a metadata request (bounded by the sarama client's timeouts). It is
// idempotent.
func (k *kafkaMeta) Close() error {
	k.t.Kill(nil)
	return k.t.Wait()
}

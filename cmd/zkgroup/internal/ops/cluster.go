package ops

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// Sentinel errors. Read-only; safe for concurrent use.
var (
	ErrNoBroker  = errors.New("ops: no usable Kafka broker")
	ErrNoGroup   = errors.New("ops: group not found")
	ErrActive    = errors.New("ops: the group has active members")
	ErrNoTopic   = errors.New("ops: topic not found")
	ErrArguments = errors.New("ops: bad arguments")
)

// Dial opens a ZooKeeper session for the connect string (with its chroot).
// It blocks until the session is established or timeout passes.
func Dial(connect string, timeout time.Duration, log *slog.Logger) (*zkconn.Session, error) {
	servers, chroot, err := zkconn.ParseConnect(connect)
	if err != nil {
		return nil, fmt.Errorf("ops: --zookeeper: %w", err)
	}
	s, err := zkconn.Dial(zkconn.Config{Servers: servers, Chroot: chroot, SessionTimeout: timeout, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("ops: zookeeper %s: %w", connect, err)
	}
	return s, nil
}

// Brokers reads the brokers' registrations under /brokers/ids and returns
// the address of each for listener ("" : PLAINTEXT). Blocks on ZooKeeper.
func Brokers(s *zkconn.Session, listener string) ([]string, error) {
	addrs, _, err := s.Brokers(listener)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoBroker, err)
	}
	return addrs, nil
}

// SaramaConfig is the client config of the operator commands: manual
// commits only (offsets.KafkaStore requires it).
func SaramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "zkgroup-admin"
	cfg.Version = sarama.V2_1_0_0
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Return.Errors = true
	cfg.Metadata.Retry.Max = 5
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	return cfg
}

// Topics lists the topics registered under /brokers/topics.
func Topics(s *zkconn.Session) ([]string, error) {
	ts, _, err := s.Children(zkdata.TopicsPath)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ops: listing %s: %w", zkdata.TopicsPath, err)
	}
	sort.Strings(ts)
	return ts, nil
}

// Partitions returns the partition ids of topic from its registration,
// sorted. A missing topic gives an error wrapping ErrNoTopic.
func Partitions(s *zkconn.Session, topic string) ([]int32, error) {
	data, _, err := s.Get(zkdata.TopicPath(topic))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("%w: %q has no registration at %s%s", ErrNoTopic, topic, s.Chroot(), zkdata.TopicPath(topic))
	}
	if err != nil {
		return nil, fmt.Errorf("ops: reading topic %q: %w", topic, err)
	}
	t, err := zkdata.ParseTopic(topic, data)
	if err != nil {
		return nil, err
	}
	out := make([]int32, 0, len(t.Partitions))
	for p := range t.Partitions {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// Members lists the ids under /consumers/<group>/ids (nil when the group
// has none or does not exist), sorted.
func Members(s *zkconn.Session, group string) ([]string, error) {
	ids, _, err := s.Children(zkdata.IDsPath(group))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ops: listing %s: %w", zkdata.IDsPath(group), err)
	}
	sort.Strings(ids)
	return ids, nil
}

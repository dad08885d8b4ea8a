package ops

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup"
	"github.com/zkgroup/zkgroup/internal/saramaconf"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// Sentinel errors. Read-only; safe for concurrent use.
var (
	ErrNoGroup = errors.New("ops: group not found")
	ErrActive  = errors.New("ops: the group has active members")
	ErrNoTopic = errors.New("ops: topic not found")
	// ErrConfig is wrapped by every error about a bad argument. It is
	// zkgroup.ErrConfig, the module's one sentinel for an invalid
	// configuration or argument.
	ErrConfig = zkgroup.ErrConfig
	// ErrZooKeeperRefused: every ZooKeeper server of the connect string
	// refused the TCP connection (nothing listens there).
	ErrZooKeeperRefused = errors.New("ops: every ZooKeeper server refused the connection")
)

// probeTimeout bounds ProbeRefused's dial of one server.
const probeTimeout = 2 * time.Second

// ProbeRefused dials every server of the connect string once, in
// parallel, and returns an error wrapping ErrZooKeeperRefused, naming
// each server and its error, when every one refused the connection: then
// a session dial would only wait out its timeout. It returns nil when a
// server accepted, or failed in another way (no answer within 2s or
// ctx's end, a name that does not resolve), which a session dial may
// still wait for. It blocks for at most 2s.
func ProbeRefused(ctx context.Context, connect string) error {
	servers, _, err := zkconn.ParseConnect(connect)
	if err != nil {
		return fmt.Errorf("%w: --zookeeper: %w", ErrConfig, err)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, addr := range servers {
		wg.Go(func() {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				_ = c.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	var why []string
	for i, err := range errs {
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil
		}
		why = append(why, servers[i]+": connection refused")
	}
	return fmt.Errorf("%w (%s): is ZooKeeper running, and is the connect string %q right?", ErrZooKeeperRefused, strings.Join(why, "; "), connect)
}

// ZooKeeper says how to reach ZooKeeper. A plain value.
type ZooKeeper struct {
	// Connect is "host:2181,host2:2181/chroot".
	Connect string
	// Timeout is the session timeout, and how long Dial waits.
	Timeout time.Duration
	// TLS, when set, connects to the secure client port with it.
	TLS *tls.Config
	// Auth are credentials sent with AddAuth (digest "user:password"); the
	// nodes the commands create then get a creator-only-write ACL.
	Auth []zkconn.Auth
}

// Dial opens a ZooKeeper session for the connect string (with its chroot),
// without TLS or credentials. It blocks until the session is established
// or timeout passes.
func Dial(connect string, timeout time.Duration, log *slog.Logger) (*zkconn.Session, error) {
	return DialZooKeeper(ZooKeeper{Connect: connect, Timeout: timeout}, log)
}

// DialZooKeeper opens a ZooKeeper session as z says. It blocks until the
// session is established or z.Timeout passes; the error then names the
// last connection failure (a refused certificate, a closed port).
func DialZooKeeper(z ZooKeeper, log *slog.Logger) (*zkconn.Session, error) {
	return DialZooKeeperContext(context.Background(), z, log)
}

// DialZooKeeperContext is DialZooKeeper that also gives up, leaving
// nothing running, when ctx ends first.
func DialZooKeeperContext(ctx context.Context, z ZooKeeper, log *slog.Logger) (*zkconn.Session, error) {
	servers, chroot, err := zkconn.ParseConnect(z.Connect)
	if err != nil {
		return nil, fmt.Errorf("ops: --zookeeper: %w", err)
	}
	s, err := zkconn.DialContext(ctx, zkconn.Config{Servers: servers, Chroot: chroot, SessionTimeout: z.Timeout,
		Auth: z.Auth, TLS: z.TLS, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("ops: zookeeper %s: %w", z.Connect, err)
	}
	return s, nil
}

// Brokers reads the brokers' registrations under /brokers/ids and returns
// the address of each for listener ("" : PLAINTEXT). When nothing is
// registered there (a Kafka 4 or other KRaft cluster, whose brokers do not
// register in ZooKeeper, or a wrong chroot) the error says so and that the
// brokers must be given. Blocks on ZooKeeper.
func Brokers(s *zkconn.Session, listener string) ([]string, error) {
	addrs, _, err := s.Brokers(listener)
	if err != nil {
		if errors.Is(err, zkconn.ErrNoBrokerRegistered) {
			return nil, fmt.Errorf("%w: no Kafka brokers known: none are registered under %s%s in ZooKeeper "+
				"(Kafka 4 and other KRaft clusters register none; or the chroot is wrong): "+
				"give them with --brokers host:port,... or brokers: in the config file", zkconn.ErrNoBroker, s.Chroot(), zkdata.BrokerIDsPath)
		}
		return nil, err // wraps zkconn.ErrNoBroker
	}
	return addrs, nil
}

// SaramaConfig is the client config of the operator commands: a copy of
// base (client id, version, TLS and SASL; nil: sarama's defaults with
// version 2.1.0 and client id "zkgroup-admin") with manual commits only
// (offsets.KafkaStore requires it).
func SaramaConfig(base *sarama.Config) *sarama.Config {
	cfg := saramaconf.From(base, "zkgroup-admin")
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Return.Errors = true
	cfg.Metadata.Retry.Max = 5
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	return cfg
}

// Topics lists the topics registered under /brokers/topics.
func Topics(s *zkconn.Session) ([]string, error) {
	return children(s, zkdata.TopicsPath)
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

// children lists the children of path, sorted; none when path does not
// exist. Blocks on ZooKeeper.
func children(s *zkconn.Session, path string) ([]string, error) {
	names, _, err := s.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ops: listing %s: %w", path, err)
	}
	sort.Strings(names)
	return names, nil
}

// Members lists the ids under /consumers/<group>/ids (nil when the group
// has none or does not exist), sorted.
func Members(s *zkconn.Session, group string) ([]string, error) {
	return children(s, zkdata.IDsPath(group))
}

// KafkaTopics lists the cluster's topics from Kafka's metadata (no
// internal topics), sorted: what ZooKeeper's /brokers/topics lists in
// ZooKeeper mode, and the only source in KRaft mode. Blocks on Kafka.
func KafkaTopics(client sarama.Client) ([]string, error) {
	if err := client.RefreshMetadata(); err != nil {
		return nil, fmt.Errorf("ops: kafka metadata: %w", err)
	}
	ts, err := client.Topics()
	if err != nil {
		return nil, fmt.Errorf("ops: kafka topics: %w", err)
	}
	out := ts[:0]
	for _, t := range ts {
		if !strings.HasPrefix(t, "__") {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out, nil
}

// KafkaPartitions returns a function giving a topic's partition ids from
// Kafka's metadata, sorted; a missing topic gives an error wrapping
// ErrNoTopic. Blocks on Kafka.
func KafkaPartitions(client sarama.Client) func(topic string) ([]int32, error) {
	return func(topic string) ([]int32, error) {
		ps, err := client.Partitions(topic)
		if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return nil, fmt.Errorf("%w: %q is unknown to Kafka", ErrNoTopic, topic)
		}
		if err != nil {
			return nil, fmt.Errorf("ops: partitions of %q: %w", topic, err)
		}
		out := append([]int32(nil), ps...)
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out, nil
	}
}

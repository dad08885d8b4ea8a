package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/offsets"
)

// errUsage marks errors in the command line (exit 2).
var errUsage = errors.New("usage")

// groupFlags are the flags every operator command shares.
type groupFlags struct {
	zookeeper string
	group     string
	storage   string
	brokers   string
	listener  string
	timeout   time.Duration
	json      bool
}

func (g *groupFlags) register(fs *flag.FlagSet, withStorage bool) {
	fs.StringVar(&g.zookeeper, "zookeeper", envDefault("ZKGROUP_ZOOKEEPER", ""), "ZooKeeper connect string host:2181/chroot (env ZKGROUP_ZOOKEEPER)")
	fs.StringVar(&g.group, "group", envDefault("ZKGROUP_GROUP", ""), "consumer group (env ZKGROUP_GROUP)")
	if withStorage {
		fs.StringVar(&g.storage, "offset-storage", envDefault("ZKGROUP_OFFSET_STORAGE", manager.StorageKafka), "where the group commits: kafka or zookeeper")
	}
	fs.StringVar(&g.brokers, "brokers", envDefault("ZKGROUP_BROKERS", ""), "Kafka brokers host:port,... (default: read from ZooKeeper)")
	fs.StringVar(&g.listener, "listener", envDefault("ZKGROUP_LISTENER", ""), "broker listener name to use from ZooKeeper (default PLAINTEXT)")
	fs.DurationVar(&g.timeout, "timeout", 15*time.Second, "ZooKeeper session timeout and Kafka request bound")
	fs.BoolVar(&g.json, "json", false, "print JSON")
}

func (g *groupFlags) check() error {
	switch {
	case g.zookeeper == "":
		return fmt.Errorf("%w: --zookeeper is required", errUsage)
	case g.group == "":
		return fmt.Errorf("%w: --group is required", errUsage)
	}
	if _, _, err := zkconn.ParseConnect(g.zookeeper); err != nil {
		return fmt.Errorf("%w: --zookeeper: %w", errUsage, err)
	}
	if err := zkdata.ValidateNodeName("group", g.group); err != nil {
		return fmt.Errorf("%w: --group: %w", errUsage, err)
	}
	if g.storage != "" && g.storage != manager.StorageKafka && g.storage != manager.StorageZooKeeper {
		return fmt.Errorf("%w: --offset-storage %q: want kafka or zookeeper", errUsage, g.storage)
	}
	return nil
}

// conn is an operator command's connections.
type conn struct {
	log     *slog.Logger
	group   string
	sess    *zkconn.Session
	brokers []string
	client  sarama.Client
	admin   sarama.ClusterAdmin
}

func (g *groupFlags) connect(stderr io.Writer) (*conn, error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	c := &conn{log: log, group: g.group}
	var err error
	if c.sess, err = ops.Dial(g.zookeeper, g.timeout, log); err != nil {
		return nil, err
	}
	if g.brokers != "" {
		for _, b := range strings.Split(g.brokers, ",") {
			if b = strings.TrimSpace(b); b != "" {
				c.brokers = append(c.brokers, b)
			}
		}
	} else if c.brokers, err = ops.Brokers(c.sess, g.listener); err != nil {
		c.close()
		return nil, err
	}
	cfg := ops.SaramaConfig()
	cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = g.timeout, g.timeout, g.timeout
	if c.client, err = sarama.NewClient(c.brokers, cfg); err != nil {
		c.close()
		return nil, fmt.Errorf("kafka %v: %w", c.brokers, err)
	}
	if c.admin, err = sarama.NewClusterAdmin(c.brokers, cfg); err != nil {
		c.close()
		return nil, fmt.Errorf("kafka admin %v: %w", c.brokers, err)
	}
	return c, nil
}

// store opens the group's offset store of a kind.
func (c *conn) store(kind string) (offsets.Store, error) {
	if kind == manager.StorageZooKeeper {
		return offsets.NewZooKeeperStore(c.sess, c.group, c.sess.ACL())
	}
	return offsets.NewKafkaStore(c.client, c.group, offsets.NewKafkaConfig(), c.log)
}

// committed reads every committed offset of the group from a store kind.
func (c *conn) committed(kind string) (ops.Offsets, error) {
	if kind == manager.StorageZooKeeper {
		return ops.ZooKeeperCommitted(c.sess, c.group)
	}
	return ops.KafkaCommitted(c.admin, c.group)
}

func (c *conn) close() {
	if c.admin != nil {
		_ = c.admin.Close()
	}
	if c.client != nil {
		_ = c.client.Close()
	}
	if c.sess != nil {
		c.sess.Close()
	}
}

// exitFor maps an error to an exit status.
func exitFor(err error) int {
	if errors.Is(err, errUsage) || errors.Is(err, ops.ErrArguments) {
		return exitUsage
	}
	return exitFailure
}

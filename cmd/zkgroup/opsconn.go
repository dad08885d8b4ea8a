package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/offsets"
	"github.com/zkgroup/zkgroup/subscription"
)

// errUsage marks errors in the command line (exit 2).
var errUsage = errors.New("usage")

// groupFlags are the flags every operator command shares. The
// connection settings come from the daemon's configuration (--config and
// ZKGROUP_* variables, as for run), overridden by these flags.
type groupFlags struct {
	configFile string
	zookeeper  string
	group      string
	storage    string
	brokers    string
	listener   string
	timeout    time.Duration
	json       bool
	fs         *flag.FlagSet
	cfg        *config.Config // loaded by check
}

func (g *groupFlags) register(fs *flag.FlagSet, withStorage bool) {
	g.registerZooKeeper(fs)
	if withStorage {
		fs.StringVar(&g.storage, "offset-storage", "", "where the group commits: kafka or zookeeper (default: offset_storage of the config, else kafka)")
	}
	fs.StringVar(&g.brokers, "brokers", "", "Kafka brokers host:port,... (default: brokers of the config, else read from\n/brokers/ids in ZooKeeper; required with Kafka 4 / KRaft)")
	fs.StringVar(&g.listener, "listener", "", "broker listener name to use from /brokers/ids (default: listener of the config, else PLAINTEXT)")
}

// registerZooKeeper adds the flags of a command that needs ZooKeeper only.
func (g *groupFlags) registerZooKeeper(fs *flag.FlagSet) {
	g.fs = fs
	fs.StringVar(&g.configFile, "config", envDefault("ZKGROUP_CONFIG", ""), "the daemon's YAML config file: ZooKeeper, group, brokers, Kafka TLS/SASL and\nZooKeeper credentials are read from it (env ZKGROUP_CONFIG; default: none)")
	fs.StringVar(&g.zookeeper, "zookeeper", "", "ZooKeeper connect string host:2181/chroot (default: zookeeper of the config, env ZKGROUP_ZOOKEEPER)")
	fs.StringVar(&g.group, "group", "", "consumer group (default: group of the config, env ZKGROUP_GROUP)")
	fs.DurationVar(&g.timeout, "timeout", 15*time.Second, "ZooKeeper session timeout and Kafka request bound")
	fs.BoolVar(&g.json, "json", false, "print JSON")
}

// parse parses args with the flag set g registered on, then loads the
// configuration (check). ok is false when the command ends there with
// code: -h, a bad flag, or a configuration error (reported as fail does).
func (g *groupFlags) parse(args []string, stdout, stderr io.Writer) (int, bool) {
	if code, ok := parseFlags(g.fs, args); !ok {
		return code, false
	}
	if err := g.check(); err != nil {
		return fail(stdout, stderr, g.json, exitUsage, err), false
	}
	return 0, true
}

// minTimeout is the shortest --timeout: ZooKeeper sessions are no
// shorter than a second.
const minTimeout = time.Second

// checkTopics refuses topic names Kafka would refuse (flag names the
// flag), before anything connects.
func checkTopics(flag string, topics ...string) error {
	for _, t := range topics {
		if err := subscription.ValidateTopic(t); err != nil {
			return fmt.Errorf("%w: --%s: %w", errUsage, flag, err)
		}
	}
	return nil
}

// check loads the configuration (file, ZKGROUP_* variables, then these
// flags), validates what the commands need and reads the passwords and
// TLS files. Errors wrap errUsage (exit 2).
func (g *groupFlags) check() error {
	cfg, err := config.Load(config.Sources{File: g.configFile, Lookup: os.LookupEnv})
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	set := map[string]bool{}
	g.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	override := func(flagName, path string, apply func()) {
		if set[flagName] {
			apply()
			cfg.SetOrigin(path, "flag --"+flagName)
		}
	}
	override("zookeeper", "zookeeper", func() { cfg.ZooKeeper = g.zookeeper })
	override("group", "group", func() { cfg.Group = g.group })
	override("offset-storage", "offset_storage", func() { cfg.OffsetStorage = g.storage })
	override("listener", "listener", func() { cfg.Listener = g.listener })
	override("brokers", "brokers", func() {
		cfg.Brokers = nil
		for _, b := range strings.Split(g.brokers, ",") {
			if b = strings.TrimSpace(b); b != "" {
				cfg.Brokers = append(cfg.Brokers, b)
			}
		}
	})
	switch {
	case cfg.ZooKeeper == "":
		return fmt.Errorf("%w: --zookeeper is required (or zookeeper: in --config, or ZKGROUP_ZOOKEEPER)", errUsage)
	case cfg.Group == "":
		return fmt.Errorf("%w: --group is required (or group: in --config, or ZKGROUP_GROUP)", errUsage)
	case g.timeout < minTimeout:
		return fmt.Errorf("%w: --timeout %v: must be at least %v (a ZooKeeper session's shortest)", errUsage, g.timeout, minTimeout)
	}
	if err := cfg.ValidateConnection(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := cfg.Resolve(os.LookupEnv); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	g.cfg = cfg
	g.zookeeper, g.group, g.storage = cfg.ZooKeeper, cfg.Group, cfg.OffsetStorage
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

// zooKeeperOf says how to reach ZooKeeper as cfg configures it.
func zooKeeperOf(cfg *config.Config, timeout time.Duration) ops.ZooKeeper {
	z := ops.ZooKeeper{Connect: cfg.ZooKeeper, Timeout: timeout, TLS: cfg.ZooKeeperTLSConfig()}
	if user, pw, ok := cfg.ZooKeeperCredentials(); ok {
		z.Auth = []zkconn.Auth{{Scheme: "digest", Credentials: []byte(user + ":" + pw.Reveal())}}
	}
	return z
}

// waitNoteAfter is how long connect waits for a ZooKeeper session
// before it says on stderr what it waits for.
const waitNoteAfter = 2 * time.Second

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// connect opens the command's ZooKeeper session and Kafka clients. When
// every ZooKeeper server refuses the connection it fails at once; when
// the session takes longer than waitNoteAfter, it says on stderr what it
// waits for and for how long (--timeout).
func (g *groupFlags) connect(stderr io.Writer) (*conn, error) {
	stderr = &lockedWriter{w: stderr}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	c := &conn{log: log, group: g.cfg.Group}
	var err error
	if c.sess, err = g.connectZooKeeper(stderr, log); err != nil {
		return nil, err
	}
	if c.brokers = g.cfg.Brokers; len(c.brokers) == 0 {
		if c.brokers, err = ops.Brokers(c.sess, g.cfg.Listener); err != nil {
			c.close()
			return nil, err
		}
	}
	base, err := g.cfg.Sarama()
	if err != nil {
		c.close()
		return nil, err
	}
	cfg := ops.SaramaConfig(base)
	cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = g.timeout, g.timeout, g.timeout
	if c.client, err = sarama.NewClient(c.brokers, cfg); err != nil {
		c.close()
		return nil, explain(fmt.Errorf("kafka %v: %w", c.brokers, err), g.cfg, sideKafka)
	}
	if c.admin, err = sarama.NewClusterAdminFromClient(c.client); err != nil {
		c.close()
		return nil, explain(fmt.Errorf("kafka admin %v: %w", c.brokers, err), g.cfg, sideKafka)
	}
	return c, nil
}

// connectZooKeeper opens the command's ZooKeeper session (see connect).
func (g *groupFlags) connectZooKeeper(stderr io.Writer, log *slog.Logger) (*zkconn.Session, error) {
	if err := ops.ProbeRefused(context.Background(), g.cfg.ZooKeeper); err != nil {
		return nil, err
	}
	note := time.AfterFunc(waitNoteAfter, func() {
		fmt.Fprintf(stderr, "zkgroup: waiting up to %v (--timeout) for a ZooKeeper session with %s\n", g.timeout, g.cfg.ZooKeeper)
	})
	sess, err := ops.DialZooKeeper(zooKeeperOf(g.cfg, g.timeout), log)
	note.Stop()
	if err != nil {
		return nil, explain(err, g.cfg, sideZooKeeper)
	}
	return sess, nil
}

// store opens the group's offset store of a kind.
func (c *conn) store(kind string) (offsets.Store, error) {
	if manager.Storage(kind) == manager.StorageZooKeeper {
		return offsets.NewZooKeeperStore(c.sess, c.group, c.sess.ACL())
	}
	return offsets.NewKafkaStore(c.client, c.group, offsets.NewKafkaConfig(), c.log)
}

// committed reads every committed offset of the group from a store kind.
func (c *conn) committed(kind string) (ops.Offsets, error) {
	if manager.Storage(kind) == manager.StorageZooKeeper {
		return ops.ZooKeeperCommitted(c.sess, c.group)
	}
	return ops.KafkaCommitted(c.admin, c.group)
}

func (c *conn) close() {
	if c.admin != nil {
		_ = c.admin.Close() // closes the client it was made from
	} else if c.client != nil {
		_ = c.client.Close()
	}
	if c.sess != nil {
		c.sess.Close()
	}
}

// exitFor maps an error to an exit status: a usage error, or anything
// wrapping ErrConfig (zkgroup.ErrConfig, whichever package found the bad
// argument or setting), exits 2; a refusal 3; anything else 1.
func exitFor(err error) int {
	switch {
	case errors.Is(err, errUsage) || errors.Is(err, ops.ErrConfig):
		return exitUsage
	case errors.Is(err, errRefused):
		return exitRefused
	}
	return exitFailure
}

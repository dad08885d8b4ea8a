package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
)

// preflightResult is what a preflight found, for validate --connect.
type preflightResult struct {
	Chroot       string   `json:"chroot"`        // of the connect string; "" for none
	ChrootExists bool     `json:"chroot_exists"` // a member creates a missing one
	Brokers      []string `json:"brokers"`       // the brokers connected to
	// Registered: the brokers were read from ZooKeeper's /brokers/ids,
	// not configured.
	Registered bool     `json:"brokers_registered"`
	Topics     []string `json:"-"` // the topics Kafka lists, without internal ones
}

// preflight connects to ZooKeeper and Kafka the way the daemon will,
// before it joins, so that a refused password or certificate, a group
// whose nodes belong to other ZooKeeper credentials, or a ZooKeeper
// without brokers (Kafka 4 / KRaft and no brokers given) is reported
// plainly instead of as a failed join. Errors wrap errRefused (exit 3)
// for security refusals. When res is not nil it is filled with what was
// found, Kafka's topics included (validate --connect). Blocks for the
// connections, bounded by the session timeout and by ctx.
func preflight(ctx context.Context, cfg *config.Config, log *slog.Logger, res *preflightResult) error {
	listTopics := res != nil
	if res == nil {
		res = new(preflightResult)
	}
	quiet := slog.New(slog.DiscardHandler)
	z := zooKeeperOf(cfg, cfg.SessionTimeout.D())
	sess, err := ops.DialZooKeeperContext(ctx, z, quiet)
	if err != nil {
		return explain(err, cfg, sideZooKeeper)
	}
	defer sess.Close()
	if err := ops.CheckGroupWritable(sess, cfg.Group, z.Auth); err != nil {
		return explain(err, cfg, sideZooKeeper)
	}
	res.Chroot, res.ChrootExists = sess.Chroot(), true
	if res.Chroot != "" {
		if res.ChrootExists, _, err = sess.Exists("/"); err != nil {
			return fmt.Errorf("zookeeper: reading the chroot %s: %w", res.Chroot, err)
		}
	}
	brokers := cfg.Brokers
	if len(brokers) == 0 {
		if brokers, err = ops.Brokers(sess, cfg.Listener); err != nil {
			if !res.ChrootExists {
				return fmt.Errorf("the chroot %s does not exist in ZooKeeper: %w", res.Chroot, err)
			}
			return err
		}
		res.Registered = true
	}
	res.Brokers = brokers
	base, err := cfg.Sarama()
	if err != nil {
		return err
	}
	sc := ops.SaramaConfig(base)
	bound := min(cfg.SessionTimeout.D(), 30*time.Second)
	sc.Net.DialTimeout, sc.Net.ReadTimeout, sc.Net.WriteTimeout = bound, bound, bound
	sc.Metadata.Retry.Max = 1
	client, err := sarama.NewClient(brokers, sc)
	if err != nil {
		return explain(fmt.Errorf("kafka %v: %w", brokers, err), cfg, sideKafka)
	}
	defer client.Close()
	if listTopics {
		if res.Topics, err = ops.KafkaTopics(client); err != nil {
			return explain(fmt.Errorf("kafka %v: %w", brokers, err), cfg, sideKafka)
		}
	}
	log.Debug("preflight passed", "brokers", brokers, "tls", cfg.Kafka.TLS.Enable, "sasl", cfg.Kafka.SASL.Mechanism,
		"zookeeper_tls", cfg.ZooKeeperTLS.Enable, "zookeeper_auth", cfg.ZooKeeperAuth.Username != "")
	return nil
}

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

// preflight connects to ZooKeeper and Kafka the way the daemon will,
// before it joins, so that a refused password or certificate, a group
// whose nodes belong to other ZooKeeper credentials, or a ZooKeeper
// without brokers (Kafka 4 / KRaft and no brokers given) is reported
// plainly instead of as a failed join. Errors wrap errRefused (exit 3)
// for security refusals. Blocks for the connections, bounded by the
// session timeout and by ctx.
func preflight(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
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
	brokers := cfg.Brokers
	if len(brokers) == 0 {
		if brokers, err = ops.Brokers(sess, cfg.Listener); err != nil {
			return err
		}
	}
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
	_ = client.Close()
	log.Debug("preflight passed", "brokers", brokers, "tls", cfg.Kafka.TLS.Enable, "sasl", cfg.Kafka.SASL.Mechanism,
		"zookeeper_tls", cfg.ZooKeeperTLS.Enable, "zookeeper_auth", cfg.ZooKeeperAuth.Username != "")
	return nil
}

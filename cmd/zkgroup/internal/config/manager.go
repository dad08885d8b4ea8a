package config

import (
	"fmt"
	"github.com/zkgroup/zkgroup/manager/assign"
	"log/slog"
	"strings"

	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// Manager builds the consumer's configuration and subscription from c:
// RestartGrace as RestartGraceD says, ModePartitions (one stream per owned
// partition, which the daemon's pipeline reads message by message, or with
// Poll for a batch sink), CloseTimeout just under
// ShutdownTimeout, logger (nil: discard), and the Kafka client settings,
// ZooKeeper credentials and ZooKeeper TLS that Resolve read (before
// Resolve, with TLS or SASL configured, those are left out). It runs
// manager.Config.Validate. Pure; does not block.
func (c *Config) Manager(logger *slog.Logger) (*manager.Config, *subscription.Subscription, error) {
	sub, err := subscription.Parse(c.Subscription)
	if err != nil {
		return nil, nil, fmt.Errorf("subscription: %w", err) // wraps ErrConfig
	}
	m := manager.NewConfig()
	m.InstanceID = c.InstanceID
	m.SessionTimeout = c.SessionTimeout.D()
	m.KafkaUnreachableTimeout = c.KafkaUnreachableTimeout.D()
	if m.RestartGrace, err = c.RestartGraceD(); err != nil {
		return nil, nil, err
	}
	m.ZooKeeperMaxReply = c.ZooKeeperMaxReply
	if m.Strategy, err = assign.ByName(c.Strategy); err != nil {
		return nil, nil, fmt.Errorf("strategy: %w", err) // wraps ErrConfig
	}
	m.OffsetStorage = manager.Storage(c.OffsetStorage)
	m.Mode = manager.ModePartitions
	m.Brokers = append([]string(nil), c.Brokers...)
	m.Listener = c.Listener
	m.Partition = c.Partition.Config
	// Close must return before the daemon's own deadline.
	m.CloseTimeout = c.ShutdownTimeout.D() * 9 / 10
	m.Logger = logger
	if c.resolved() || (!c.Kafka.TLS.Enable && c.Kafka.SASL.Mechanism == "") {
		if m.Sarama, err = c.Sarama(); err != nil {
			return nil, nil, err
		}
	}
	if user, pw, ok := c.ZooKeeperCredentials(); ok {
		m.Auth = []manager.ZooKeeperAuth{{Scheme: "digest", Credentials: user + ":" + pw.Reveal()}}
	}
	m.ZooKeeperTLS = c.ZooKeeperTLSConfig()
	if err := m.Validate(); err != nil {
		return nil, nil, err // wraps ErrConfig
	}
	return m, sub, nil
}

// ParseLevel parses debug, info, warn (or warning) and error, in any case.
// Pure; does not block.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%w: log level %q", ErrConfig, s)
}

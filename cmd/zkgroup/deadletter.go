package main

import (
	"log/slog"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
)

// newDeadLetter connects the dead-letter producer with the same Kafka
// client settings (client id, version, TLS, SASL) as the consumer, to the
// configured brokers or to those registered in ZooKeeper (read over the
// configured ZooKeeper TLS and credentials). It blocks for the
// connections.
func newDeadLetter(cfg *config.Config, log *slog.Logger) (*sink.KafkaDeadLetter, error) {
	brokers := cfg.Brokers
	if len(brokers) == 0 {
		sess, err := ops.DialZooKeeper(zooKeeperOf(cfg, cfg.SessionTimeout.D()), log)
		if err != nil {
			return nil, explain(err, cfg, sideZooKeeper)
		}
		brokers, err = ops.Brokers(sess, cfg.Listener)
		sess.Close()
		if err != nil {
			return nil, err
		}
	}
	base, err := cfg.Sarama()
	if err != nil {
		return nil, err
	}
	dl, err := sink.NewKafkaDeadLetter(brokers, cfg.Sink.DeadLetterTopic, cfg.Group, sink.ProducerConfig(base))
	if err != nil {
		return nil, explain(err, cfg, sideKafka)
	}
	return dl, nil
}

package sink

import (
	"context"
	"fmt"
	"github.com/zkgroup/zkgroup/manager"
	"strconv"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/saramaconf"
)

// Headers added to a dead-lettered message, beside its own headers.
const (
	HeaderSourceTopic     = "zkgroup.source.topic"
	HeaderSourcePartition = "zkgroup.source.partition"
	HeaderSourceOffset    = "zkgroup.source.offset"
	HeaderError           = "zkgroup.error"
	HeaderGroup           = "zkgroup.group"
)

// KafkaDeadLetter produces failed messages to a topic with a sarama
// SyncProducer (acks from all in-sync replicas). Safe for concurrent use;
// DeadLetter blocks until the broker acknowledged or the producer gave up.
type KafkaDeadLetter struct {
	topic    string
	group    string
	producer sarama.SyncProducer
}

// ProducerConfig returns the sarama config of the dead-letter producer: a
// copy of base (the client id, version, TLS and SASL every client of the
// daemon shares; nil: sarama's defaults with version 2.1.0 and client id
// "zkgroup") with acks from all in-sync replicas and three retries.
func ProducerConfig(base *sarama.Config) *sarama.Config {
	cfg := saramaconf.From(base, saramaconf.ClientID)
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = 3
	return cfg
}

// NewKafkaDeadLetter connects a producer to brokers with cfg (nil:
// ProducerConfig(nil); build it with ProducerConfig from the daemon's
// base config so that TLS and SASL apply). It blocks for the first
// metadata request.
func NewKafkaDeadLetter(brokers []string, topic, group string, cfg *sarama.Config) (*KafkaDeadLetter, error) {
	if topic == "" {
		return nil, fmt.Errorf("%w: dead-letter topic: empty", ErrConfig)
	}
	if cfg == nil {
		cfg = ProducerConfig(nil)
	}
	p, err := sarama.NewSyncProducer(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("sink: dead-letter producer for %v: %w", brokers, err)
	}
	return &KafkaDeadLetter{topic: topic, group: group, producer: p}, nil
}

// Message builds the dead-letter record of m: same key, value and headers,
// plus the source coordinates, the group and the error. Pure.
func Message(topic, group string, m *manager.Message, cause error) *sarama.ProducerMessage {
	pm := &sarama.ProducerMessage{Topic: topic}
	if m.Key != nil {
		pm.Key = sarama.ByteEncoder(m.Key)
	}
	if m.Value != nil {
		pm.Value = sarama.ByteEncoder(m.Value)
	}
	for _, h := range m.Headers {
		if h != nil {
			pm.Headers = append(pm.Headers, sarama.RecordHeader{Key: h.Key, Value: h.Value})
		}
	}
	errText := "unknown"
	if cause != nil {
		errText = cause.Error()
	}
	pm.Headers = append(pm.Headers,
		sarama.RecordHeader{Key: []byte(HeaderSourceTopic), Value: []byte(m.Topic)},
		sarama.RecordHeader{Key: []byte(HeaderSourcePartition), Value: []byte(strconv.FormatInt(int64(m.Partition), 10))},
		sarama.RecordHeader{Key: []byte(HeaderSourceOffset), Value: []byte(strconv.FormatInt(m.Offset, 10))},
		sarama.RecordHeader{Key: []byte(HeaderGroup), Value: []byte(group)},
		sarama.RecordHeader{Key: []byte(HeaderError), Value: []byte(errText)},
	)
	return pm
}

// DeadLetter produces m to the topic. ctx is checked before sending;
// sarama bounds the send itself (Net and Producer timeouts).
func (k *KafkaDeadLetter) DeadLetter(ctx context.Context, m *manager.Message, cause error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, _, err := k.producer.SendMessage(Message(k.topic, k.group, m, cause)); err != nil {
		return fmt.Errorf("sink: dead-letter %s/%d@%d to %q: %w", m.Topic, m.Partition, m.Offset, k.topic, err)
	}
	return nil
}

// Close closes the producer.
func (k *KafkaDeadLetter) Close() error { return k.producer.Close() }

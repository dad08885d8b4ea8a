// Package saramaconf is the one place a sarama client config of zkgroup
// starts from: sarama's defaults, the Kafka protocol version zkgroup
// speaks and a client id. Every Kafka client of the module (the
// consumer's, the operator commands', the daemon's dead-letter producer,
// the daemon's base config) starts from New or From and adds its own
// settings to the copy it gets.
package saramaconf

import "github.com/IBM/sarama"

// Version is the Kafka protocol version spoken unless configured: 2.1.0
// is the oldest that Kafka 4 still serves (KIP-896) and is served by
// every broker since 2.1, ZooKeeper mode or KRaft.
var Version = sarama.V2_1_0_0

// ClientID is the client id used when none is given.
const ClientID = "zkgroup"

// New returns sarama's defaults with Version and clientID ("": ClientID).
// Each call returns a new config, the caller's to change.
func New(clientID string) *sarama.Config {
	c := sarama.NewConfig()
	c.Version = Version
	c.ClientID = clientID
	if c.ClientID == "" {
		c.ClientID = ClientID
	}
	return c
}

// From returns a copy of base (a shallow one, as sarama copies configs:
// TLS configs and funcs are shared), or New(clientID) when base is nil.
// The caller may change what it gets without touching base.
func From(base *sarama.Config, clientID string) *sarama.Config {
	if base == nil {
		return New(clientID)
	}
	c := *base
	return &c
}

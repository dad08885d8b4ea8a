// Package kafkasasl adapts github.com/xdg-go/scram to sarama's SCRAM
// client interface, for SASL SCRAM-SHA-256 and SCRAM-SHA-512: used by the
// daemon's configuration, the test cluster and the library's example.
package kafkasasl

import (
	"crypto/sha256"
	"crypto/sha512"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// SCRAM hash functions.
var (
	SHA256 scram.HashGeneratorFcn = sha256.New
	SHA512 scram.HashGeneratorFcn = sha512.New
)

// scramClient adapts github.com/xdg-go/scram to sarama.SCRAMClient. One
// client serves one authentication; not safe for concurrent use.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

// NewSCRAMClient returns a generator of SCRAM clients for
// sarama.Config.Net.SASL.SCRAMClientGeneratorFunc.
func NewSCRAMClient(hash scram.HashGeneratorFcn) func() sarama.SCRAMClient {
	return func() sarama.SCRAMClient { return &scramClient{hash: hash} }
}

// Begin starts a conversation for the user.
func (c *scramClient) Begin(user, password, authzID string) error {
	client, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conv = client.NewConversation()
	return nil
}

// Step answers the server's challenge.
func (c *scramClient) Step(challenge string) (string, error) { return c.conv.Step(challenge) }

// Done reports whether the conversation is over.
func (c *scramClient) Done() bool { return c.conv.Done() }

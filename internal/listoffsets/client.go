package listoffsets

import "github.com/IBM/sarama"

// Client is a sarama.Client whose GetOffset goes through a Lister; every
// other method is the wrapped client's. Give it to
// sarama.NewConsumerFromClient so that the ListOffsets requests of
// ConsumePartition leave the consumer's fetch connections alone. Safe for
// concurrent use; closing it closes the wrapped client, not the Lister's.
type Client struct {
	sarama.Client
	lister *Lister
}

// Wrap returns c with its offset queries answered by l.
func Wrap(c sarama.Client, l *Lister) *Client { return &Client{Client: c, lister: l} }

// GetOffset is Lister.Offset.
func (c *Client) GetOffset(topic string, partition int32, t int64) (int64, error) {
	return c.lister.Offset(topic, partition, t)
}

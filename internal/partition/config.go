package partition

import (
	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup"
	public "github.com/zkgroup/zkgroup/partition"
)

// ErrConfig reports an invalid Config or Params; the message names the
// field. It is the module's one value for a bad config (zkgroup.ErrConfig).
var ErrConfig = zkgroup.ErrConfig

// InitialOffset is where a partition without a committed offset starts
// after c.Initial: sarama.OffsetOldest or sarama.OffsetNewest.
func InitialOffset(c Config) int64 {
	if c.Initial == public.InitialNewest {
		return sarama.OffsetNewest
	}
	return sarama.OffsetOldest
}

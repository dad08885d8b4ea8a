package zkdata

import (
	"fmt"
	"strconv"
)

// NoLeader is the PartitionState.Leader of a partition without a leader.
const NoLeader int32 = -1

// PartitionState is a decoded /brokers/topics/<t>/partitions/<p>/state node.
// It is a plain value; copies share ISR, so treat it as read-only when
// sharing between goroutines.
type PartitionState struct {
	Leader          int32 // NoLeader when there is none
	LeaderEpoch     int32
	ISR             []int32
	ControllerEpoch int32
	Version         int
}

type stateJSON struct {
	ControllerEpoch int32   `json:"controller_epoch"`
	Leader          *int32  `json:"leader"`
	Version         int     `json:"version"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ISR             []int32 `json:"isr"`
}

// ParsePartitionState decodes a partition state node. "leader" is required
// and must be NoLeader or a broker id; the other fields default to zero.
// Errors wrap ErrMalformed and name the partition and field. It is pure, safe
// for concurrent use, and does not block.
func ParsePartitionState(topic string, partition int32, data []byte) (PartitionState, error) {
	node := fmt.Sprintf("partition state %s/%d", strconv.Quote(topic), partition)
	var raw stateJSON
	if err := decodeObject(node, data, &raw); err != nil {
		return PartitionState{}, err
	}
	if raw.Leader == nil {
		return PartitionState{}, malformed(node, "leader", "", "missing")
	}
	if *raw.Leader < NoLeader {
		return PartitionState{}, malformed(node, "leader",
			strconv.FormatInt(int64(*raw.Leader), 10), "negative broker id")
	}
	return PartitionState{
		Leader:          *raw.Leader,
		LeaderEpoch:     raw.LeaderEpoch,
		ISR:             raw.ISR,
		ControllerEpoch: raw.ControllerEpoch,
		Version:         raw.Version,
	}, nil
}

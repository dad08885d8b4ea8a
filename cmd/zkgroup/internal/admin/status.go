package admin

import (
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
)

// Status is the JSON document of /status. A plain value.
type Status struct {
	Group                 string            `json:"group"`
	Instance              string            `json:"instance"`
	Version               string            `json:"version"`
	Joined                bool              `json:"joined"`
	Ready                 bool              `json:"ready"`
	SessionHealthy        bool              `json:"session_healthy"`
	Members               []string          `json:"members"`
	Assignment            []TopicPartition  `json:"assignment"`
	Partitions            []PartitionStatus `json:"partitions"`
	Rebalances            uint64            `json:"rebalances"`
	LastRebalanceDuration string            `json:"last_rebalance_duration"`
	LastRebalanceApplied  *time.Time        `json:"last_rebalance_applied,omitempty"`
	ClaimWaits            int64             `json:"claim_waits"`
	PartitionRestarts     uint64            `json:"partition_restarts"`
	Sink                  *sink.Stats       `json:"sink,omitempty"`
}

// TopicPartition names a partition in JSON.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// PartitionStatus is one owned partition in /status. Offsets of -1 are
// unknown.
type PartitionStatus struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	Committed     int64  `json:"committed_offset"`
	Acked         int64  `json:"acked_offset"`
	LastFetched   int64  `json:"last_fetched_offset"`
	HighWatermark int64  `json:"high_watermark"`
	Lag           int64  `json:"lag"`
	Unacked       int    `json:"unacked"`
	Delivered     uint64 `json:"delivered"`
	Acks          uint64 `json:"acks"`
	Suspended     bool   `json:"suspended"`
}

// NewStatus converts consumer stats; joined false gives an empty status.
// Pure.
func NewStatus(group, version string, st manager.Stats, joined bool) Status {
	out := Status{Group: group, Version: version, Joined: joined,
		Members: []string{}, Assignment: []TopicPartition{}, Partitions: []PartitionStatus{}}
	if !joined {
		return out
	}
	out.Instance, out.Ready, out.SessionHealthy = st.Instance, st.Ready, st.SessionHealthy
	out.Members = append(out.Members, st.Members...)
	for _, tp := range st.Assigned {
		out.Assignment = append(out.Assignment, TopicPartition{tp.Topic, tp.Partition})
	}
	for _, p := range st.Partitions {
		out.Partitions = append(out.Partitions, PartitionStatus{
			Topic: p.Topic, Partition: p.Partition, Committed: p.Committed, Acked: p.Acked,
			LastFetched: p.LastFetched, HighWatermark: p.HighWatermark, Lag: p.Lag,
			Unacked: p.Unacked, Delivered: p.Delivered, Acks: p.Acks, Suspended: p.Suspended,
		})
	}
	out.Rebalances = st.Rebalances
	out.LastRebalanceDuration = st.LastRebalanceDuration.String()
	if !st.LastRebalanceApplied.IsZero() {
		t := st.LastRebalanceApplied.UTC()
		out.LastRebalanceApplied = &t
	}
	out.ClaimWaits, out.PartitionRestarts = st.ClaimWaits, st.PartitionRestarts
	return out
}

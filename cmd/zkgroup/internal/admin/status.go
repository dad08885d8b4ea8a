package admin

import (
	"fmt"
	"slices"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
)

// Status is the JSON document of /status, which the group page polls. A
// plain value.
type Status struct {
	Group          string `json:"group"`
	Instance       string `json:"instance"`
	Version        string `json:"version"`
	Joined         bool   `json:"joined"`
	Ready          bool   `json:"ready"`
	Readiness      string `json:"readiness"` // why (not) ready, as /readyz says
	Alive          bool   `json:"alive"`
	Liveness       string `json:"liveness"` // as /healthz says
	SessionHealthy bool   `json:"session_healthy"`
	SessionID      string `json:"session_id"`
	// Members are the group's members as of this member's last rebalance,
	// and AwayMembers the static members it keeps partitions for, away
	// within their restart grace (manager.Stats.AwayMembers).
	Members               []string          `json:"members"`
	AwayMembers           []string          `json:"away_members"`
	Assignment            []TopicPartition  `json:"assignment"`
	Partitions            []PartitionStatus `json:"partitions"`
	Rebalances            uint64            `json:"rebalances"`
	RebalancesByCause     map[string]uint64 `json:"rebalances_by_cause"`
	RecentRebalances      []RebalanceStatus `json:"recent_rebalances"` // newest first
	LastRebalanceDuration string            `json:"last_rebalance_duration"`
	LastRebalanceApplied  *time.Time        `json:"last_rebalance_applied,omitempty"`
	ClaimWaits            int64             `json:"claim_waits"`
	PartitionRestarts     uint64            `json:"partition_restarts"`
	GroupView             *GroupViewStatus  `json:"group_view,omitempty"`
	LagHistory            []LagPoint        `json:"lag_history"`
	Sink                  *sink.Stats       `json:"sink,omitempty"`
	Now                   time.Time         `json:"now"`
}

// TopicPartition names a partition in JSON.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// PartitionStatus is one owned partition in /status. Offsets of -1 are
// unknown.
type PartitionStatus struct {
	Topic            string  `json:"topic"`
	Partition        int32   `json:"partition"`
	Committed        int64   `json:"committed_offset"`
	Acked            int64   `json:"acked_offset"`
	LastFetched      int64   `json:"last_fetched_offset"`
	HighWatermark    int64   `json:"high_watermark"`
	Lag              int64   `json:"lag"`
	Unacked          int     `json:"unacked"`
	OldestUnackedAge float64 `json:"oldest_unacked_age_seconds"`
	Delivered        uint64  `json:"delivered"`
	Acks             uint64  `json:"acks"`
	Suspended        bool    `json:"suspended"`
	CommitErrors     uint64  `json:"commit_errors"`
	FetchErrors      uint64  `json:"fetch_errors"`
	Resets           uint64  `json:"offset_resets"`
}

// RebalanceStatus is one rebalance of this member that moved partitions.
type RebalanceStatus struct {
	Seq         uint64    `json:"seq"`
	Started     time.Time `json:"started"`
	Applied     time.Time `json:"applied"`
	Took        string    `json:"took"`
	TookSeconds float64   `json:"took_seconds"`
	Causes      []string  `json:"causes"`
	Added       int       `json:"added"`
	Revoked     int       `json:"revoked"`
}

// GroupViewStatus is the whole group as ZooKeeper showed it at ReadAt.
type GroupViewStatus struct {
	ReadAt       *time.Time       `json:"read_at,omitempty"`
	Error        string           `json:"error,omitempty"` // of the last read, if it failed
	Subscription string           `json:"subscription"`
	Topics       []string         `json:"topics"`
	Members      []MemberStatus   `json:"members"`
	Partitions   []OwnerStatus    `json:"partitions"`
	Unowned      []TopicPartition `json:"unowned"`
	// Away are the members away within their restart grace: their
	// partitions are among Unowned until they are back or the grace ends.
	Away []AwayStatus `json:"away"`
}

// AwayStatus is a member away: a static member that stopped, whose
// partitions the group keeps unowned for its restart.
type AwayStatus struct {
	ID           string  `json:"id"`
	Grace        string  `json:"grace"`
	GraceSeconds float64 `json:"grace_seconds"`
	// MarkerWritten is when ZooKeeper last wrote its restart marker: when
	// it last registered, not when it stopped.
	MarkerWritten *time.Time `json:"marker_written,omitempty"`
	// FirstSeen is when this member's group view first showed it away
	// (up to a view interval after it stopped, later if this member
	// started after): the grace, counted by each member from when it saw
	// it away, ends about Grace after the earliest of them.
	FirstSeen *time.Time `json:"first_seen,omitempty"`
}

// MemberStatus is one member and the partitions its owner nodes name.
type MemberStatus struct {
	ID         string           `json:"id"`
	This       bool             `json:"this"`
	Registered bool             `json:"registered"` // false: owner nodes of an id no longer registered
	Partitions []TopicPartition `json:"partitions"`
}

// OwnerStatus is one partition of the subscription and its owner ("" for
// none).
type OwnerStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Owner     string `json:"owner"`
}

// recentRebalances is how many rebalances /status lists.
const recentRebalances = 20

// NewStatus converts consumer stats; joined false gives an empty status.
// Pure.
func NewStatus(group, version string, st manager.Stats, joined bool) Status {
	out := Status{Group: group, Version: version, Joined: joined,
		Members: []string{}, AwayMembers: []string{}, Assignment: []TopicPartition{}, Partitions: []PartitionStatus{},
		RebalancesByCause: map[string]uint64{}, RecentRebalances: []RebalanceStatus{}, LagHistory: []LagPoint{}}
	if !joined {
		return out
	}
	out.Instance, out.Ready, out.SessionHealthy = st.Instance, st.Ready, st.SessionHealthy
	if st.SessionID != 0 {
		out.SessionID = fmt.Sprintf("0x%x", st.SessionID)
	}
	out.Members = append(out.Members, st.Members...)
	out.AwayMembers = append(out.AwayMembers, st.AwayMembers...)
	for _, tp := range st.Assigned {
		out.Assignment = append(out.Assignment, TopicPartition{tp.Topic, tp.Partition})
	}
	for _, p := range st.Partitions {
		out.Partitions = append(out.Partitions, PartitionStatus{
			Topic: p.Topic, Partition: p.Partition, Committed: p.Committed, Acked: p.Acked,
			LastFetched: p.LastFetched, HighWatermark: p.HighWatermark, Lag: p.Lag,
			Unacked: p.Unacked, OldestUnackedAge: p.OldestUnackedAge.Seconds(),
			Delivered: p.Delivered, Acks: p.Acks, Suspended: p.Suspended,
			CommitErrors: p.CommitErrors, FetchErrors: p.FetchErrors, Resets: p.Resets,
		})
	}
	out.Rebalances = st.Rebalances
	for cause, n := range st.RebalancesByCause {
		out.RebalancesByCause[string(cause)] = n
	}
	for i := len(st.History) - 1; i >= 0 && len(out.RecentRebalances) < recentRebalances; i-- {
		r := st.History[i]
		rs := RebalanceStatus{Seq: r.Seq, Started: r.Started.UTC(), Applied: r.Applied.UTC(),
			Took: r.Took.Round(time.Millisecond).String(), TookSeconds: r.Took.Seconds(),
			Causes: []string{}, Added: r.Added, Revoked: r.Revoked}
		for _, c := range r.Causes {
			rs.Causes = append(rs.Causes, string(c))
		}
		out.RecentRebalances = append(out.RecentRebalances, rs)
	}
	last, _ := st.LastRebalance()
	out.LastRebalanceDuration = last.Took.String()
	if !last.Applied.IsZero() {
		t := last.Applied.UTC()
		out.LastRebalanceApplied = &t
	}
	out.ClaimWaits, out.PartitionRestarts = st.ClaimWaits, st.PartitionRestarts
	return out
}

// NewGroupViewStatus converts a group view read at readAt (zero: none
// yet) and the error of the last read; instance marks this member. Pure.
func NewGroupViewStatus(v GroupView, readAt time.Time, err error, instance string) *GroupViewStatus {
	out := &GroupViewStatus{Subscription: v.Subscription, Topics: append([]string{}, v.Topics...),
		Members: []MemberStatus{}, Partitions: []OwnerStatus{}, Unowned: []TopicPartition{}, Away: []AwayStatus{}}
	for _, a := range v.Away {
		as := AwayStatus{ID: a.ID, Grace: a.Grace.String(), GraceSeconds: a.Grace.Seconds()}
		if !a.MarkerWritten.IsZero() {
			t := a.MarkerWritten.UTC()
			as.MarkerWritten = &t
		}
		if !a.Seen.IsZero() {
			t := a.Seen.UTC()
			as.FirstSeen = &t
		}
		out.Away = append(out.Away, as)
	}
	if !readAt.IsZero() {
		t := readAt.UTC()
		out.ReadAt = &t
	}
	if err != nil {
		out.Error = err.Error()
	}
	registered := map[string]bool{}
	for _, id := range v.Members {
		registered[id] = true
	}
	owned := map[string][]TopicPartition{}
	var stale []string // owner ids no longer registered
	for _, tp := range v.Partitions {
		o := v.Owners[tp]
		out.Partitions = append(out.Partitions, OwnerStatus{tp.Topic, tp.Partition, o})
		if o == "" {
			out.Unowned = append(out.Unowned, tp)
			continue
		}
		if !registered[o] && !slices.Contains(stale, o) {
			stale = append(stale, o)
		}
		owned[o] = append(owned[o], tp)
	}
	for _, id := range append(append([]string{}, v.Members...), stale...) {
		ps := owned[id]
		if ps == nil {
			ps = []TopicPartition{}
		}
		out.Members = append(out.Members, MemberStatus{ID: id, This: id == instance, Registered: registered[id], Partitions: ps})
	}
	return out
}

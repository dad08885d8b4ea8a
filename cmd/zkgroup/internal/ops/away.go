package ops

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// Errors of Forget. Read-only; safe for concurrent use.
var (
	// ErrNotAway: the member has no restart marker (it was never static,
	// already left for good, or its grace ended).
	ErrNotAway = errors.New("ops: no restart marker for this member")
	// ErrRunning: the member is registered; a running member writes its
	// marker again whenever it registers, so it must be stopped first.
	ErrRunning = errors.New("ops: the member is registered (running)")
)

// Away is a static member that stopped and whose partitions the group
// keeps, unconsumed, for its restart: its restart marker
// (/consumers/<group>/static/<id>) is there, its registration is not.
// Members drop it once they saw it away for Grace (each by its own clock),
// or when it registers again.
type Away struct {
	ID string `json:"id"`
	// Grace is how long the members keep its partitions once they see it
	// away (the marker's zkgroup_restart_grace_ms), and GraceSeconds the
	// same in seconds.
	Grace        string  `json:"grace"`
	GraceSeconds float64 `json:"grace_seconds"`
	// MarkerWritten is when ZooKeeper last wrote its marker (the node's
	// mtime): when the member last registered, not when it stopped, which
	// ZooKeeper does not record.
	MarkerWritten time.Time `json:"marker_written,omitzero"`
	Host          string    `json:"host"`
	ClientID      string    `json:"client_id"`
	Error         string    `json:"error,omitempty"` // unreadable marker
}

// AwayMembers lists the group's members away within their grace, sorted
// by id (none when the group has no static member). Blocks on ZooKeeper.
func AwayMembers(s *zkconn.Session, group string) ([]Away, error) {
	ids, err := children(s, zkdata.StaticPath(group))
	if err != nil {
		return nil, err
	}
	var out []Away
	for _, id := range ids {
		registered, _, err := s.Exists(zkdata.IDPath(group, id))
		if err != nil {
			return nil, fmt.Errorf("ops: reading %s: %w", zkdata.IDPath(group, id), err)
		}
		if registered {
			continue // running: its marker waits for its next stop
		}
		data, stat, err := s.Get(zkdata.StaticMemberPath(group, id))
		if errors.Is(err, zk.ErrNoNode) {
			continue // its grace ended, or it left, meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("ops: reading %s: %w", zkdata.StaticMemberPath(group, id), err)
		}
		a := Away{ID: id, Host: MemberHost(group, id, data), ClientID: MemberClientID(data)}
		if stat.Mtime > 0 {
			a.MarkerWritten = time.UnixMilli(stat.Mtime).UTC()
		}
		reg, err := zkdata.ParseMemberRegistration(id, data)
		if err != nil {
			a.Error = err.Error()
		} else {
			g := time.Duration(reg.RestartGraceMS) * time.Millisecond
			a.Grace, a.GraceSeconds = g.String(), g.Seconds()
		}
		out = append(out, a)
	}
	return out, nil
}

// Forget deletes the restart marker of a stopped static member, so that
// the group moves its partitions at once instead of after its grace: what
// the member's own Leave does, for a member that stopped without it. It
// fails with ErrRunning while the member is registered (in the same
// transaction, so a member starting meanwhile keeps its marker) and with
// ErrNotAway when it has no marker. Blocks on ZooKeeper.
func Forget(s *zkconn.Session, group, id string) error {
	if err := zkdata.ValidateNodeName("instance id", id); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	idp, marker := zkdata.IDPath(group, id), zkdata.StaticMemberPath(group, id)
	// Creating and deleting the registration fails, whole, while the
	// member is registered.
	_, err := s.Multi(
		&zk.CreateRequest{Path: idp, Data: []byte("{}"), Flags: zk.FlagEphemeral},
		&zk.DeleteRequest{Path: idp, Version: -1},
		&zk.DeleteRequest{Path: marker, Version: -1},
	)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNodeExists):
		return fmt.Errorf("%w: %s: stop it first (zkgroup run exits on SIGTERM), then run this again", ErrRunning, idp)
	case errors.Is(err, zk.ErrNoNode):
		// The marker, or the ids folder of a group nobody joined.
		if ok, _, xerr := s.Exists(marker); xerr == nil && !ok {
			return fmt.Errorf("%w: %s does not exist (the member did not run with restart_grace, left already, or its grace ended)", ErrNotAway, marker)
		}
	}
	return fmt.Errorf("ops: deleting %s: %w", marker, err)
}

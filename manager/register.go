package manager

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/subscription"
)

// newInstanceID builds an id in the JVM consumer's shape:
// <group>_<host>-<ms>-<uuid8>.
func newInstanceID(group string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	host = strings.NewReplacer("/", "_", " ", "_").Replace(host)
	return fmt.Sprintf("%s_%s-%d-%s", group, host, time.Now().UnixMilli(), uuid.NewString()[:8])
}

// registration is the JSON of this member's ids node; strategy is the name
// of its assignment strategy, published for the other members.
func registration(sub *subscription.Subscription, clientID, strategy string, grace time.Duration) ([]byte, error) {
	host, _ := os.Hostname()
	return zkdata.MemberRegistration{
		RestartGraceMS: grace.Milliseconds(),
		Version:        1,
		Subscription:   sub.Registration(),
		Pattern:        string(sub.Pattern()),
		Timestamp:      time.Now().UnixMilli(),
		Host:           host,
		ClientID:       clientID,
		Strategy:       strategy,
		Assignment:     zkdata.GroupAssignmentVersion,
	}.Marshal()
}

// ensureGroupNodes creates the group's persistent nodes that are missing
// (and /consumers above them). One multiRead reads them all; the missing
// ones are created in one transaction, parents first, which ZooKeeper
// writes to its log at once (one disk sync rather than one per node). A
// member creating them at the same moment (the transaction fails on a node
// that exists now), a missing chroot or a read refused makes it create
// each node with its parents, one at a time.
func ensureGroupNodes(s *zkconn.Session, group string) error {
	paths := []string{zkdata.ConsumersRootPath, zkdata.ConsumersPath(group),
		zkdata.IDsPath(group), zkdata.OwnersPath(group), zkdata.OffsetsPath(group), zkdata.StaticPath(group)}
	if createMissing(s, paths) == nil {
		return nil
	}
	for _, p := range paths[2:] {
		if err := s.CreateParents(p); err != nil {
			return fmt.Errorf("manager: creating %s: %w", p, err)
		}
	}
	return nil
}

// createMissing creates, in one transaction, the nodes of paths (parents
// before children) that a multiRead finds missing; nil when none is
// missing or the transaction succeeded.
func createMissing(s *zkconn.Session, paths []string) error {
	got, err := s.GetMany(paths)
	if err != nil {
		return err
	}
	var ops []any
	for i, nd := range got {
		switch {
		case nd.Err == nil:
		case errors.Is(nd.Err, zk.ErrNoNode):
			ops = append(ops, &zk.CreateRequest{Path: paths[i]})
		default:
			return nd.Err
		}
	}
	if len(ops) == 0 {
		return nil
	}
	_, err = s.Multi(ops...)
	return err
}

// register creates this member's ephemeral ids node under the current
// session. A node of the same id left by an older session (a restart with
// a stable id) is deleted first.
func register(s *zkconn.Session, group, id string, data []byte) error {
	p := zkdata.IDPath(group, id)
	for attempt := 0; attempt < 10; attempt++ {
		_, err := s.Create(p, data, zk.FlagEphemeral, nil)
		if err == nil {
			return nil
		}
		if errors.Is(err, zk.ErrNoNode) {
			if err := s.CreateParents(path.Dir(p)); err != nil {
				return fmt.Errorf("manager: creating %s: %w", path.Dir(p), err)
			}
			continue
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("manager: registering %s: %w", p, err)
		}
		_, stat, gerr := s.Get(p)
		if errors.Is(gerr, zk.ErrNoNode) {
			continue
		}
		if gerr != nil {
			return fmt.Errorf("manager: registering %s: %w", p, gerr)
		}
		if stat.EphemeralOwner == s.Status().SessionID {
			_, err := s.Set(p, data, stat.Version)
			return err
		}
		if derr := s.Delete(p, stat.Version); derr != nil && !errors.Is(derr, zk.ErrNoNode) && !errors.Is(derr, zk.ErrBadVersion) {
			return fmt.Errorf("manager: deleting stale registration %s: %w", p, derr)
		}
	}
	return fmt.Errorf("manager: registering %s: gave up after 10 conflicting attempts", p)
}

// deregister deletes this member's ids node if the current session owns it.
func deregister(s *zkconn.Session, group, id string) error {
	p := zkdata.IDPath(group, id)
	_, stat, err := s.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	if stat.EphemeralOwner != s.Status().SessionID {
		return nil
	}
	if err := s.Delete(p, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

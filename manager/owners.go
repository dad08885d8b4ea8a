package manager

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// readOwners returns who holds each partition of topics, from the owner
// nodes under /consumers/<group>/owners: the topics' children lists in
// multiRead batches (zkconn.Session.ChildrenMany), then the owner nodes' data in ZooKeeper multiRead batches
// (zkconn.Session.GetMany), which ZooKeeper serves in one pass each. A
// member reads every owner node of its topics at every rebalance: at
// 1,000 partitions that is 4 requests, where a read per node (1,000
// requests, served one after another for the session) kept ZooKeeper
// busy for 80-130 ms idle and over a second under load, and watches to
// cache them cost each member a watch per node. It sets no watch.
//
// A partition with no node is absent from the result; the owner's id is
// the node's text (zkdata.ParseOwner). It writes nothing; noDir lists the
// topics that have no owners node yet.
func readOwners(s *zkconn.Session, group string, topics []string) (owners map[TopicPartition]string, noDir []string, err error) {
	var (
		tps   []TopicPartition
		paths []string
	)
	lists, err := listOwners(s, group, topics)
	if err != nil {
		return nil, nil, err
	}
	for i, t := range topics {
		if errors.Is(lists[i].Err, zk.ErrNoNode) {
			noDir = append(noDir, t)
			continue
		}
		for _, k := range lists[i].Children {
			p, err := strconv.ParseInt(k, 10, 32)
			if err != nil || p < 0 {
				continue // not a partition's node
			}
			tps = append(tps, TopicPartition{Topic: t, Partition: int32(p)})
			paths = append(paths, zkdata.OwnerPath(group, t, int32(p)))
		}
	}
	got, err := s.GetMany(paths)
	if err != nil {
		return nil, nil, fmt.Errorf("manager: reading the owners of %d partitions: %w", len(paths), err)
	}
	owners = make(map[TopicPartition]string, len(got))
	for i, g := range got {
		switch {
		case g.Err == nil:
			owners[tps[i]] = zkdata.ParseOwner(g.Data)
		case errors.Is(g.Err, zk.ErrNoNode): // released meanwhile
		default:
			return nil, nil, fmt.Errorf("manager: reading %s: %w", paths[i], g.Err)
		}
	}
	return owners, noDir, nil
}

// listOwners lists the owner nodes of each of topics (Err zk.ErrNoNode:
// the topic has no owners node), all topics in one round trip.
func listOwners(s *zkconn.Session, group string, topics []string) ([]zkconn.NodeData, error) {
	paths := make([]string, len(topics))
	for i, t := range topics {
		paths[i] = zkdata.OwnerTopicPath(group, t)
	}
	lists, err := s.ChildrenMany(paths)
	if err != nil {
		return nil, fmt.Errorf("manager: listing owners of %d topics: %w", len(topics), err)
	}
	for i, l := range lists {
		if l.Err != nil && !errors.Is(l.Err, zk.ErrNoNode) {
			return nil, fmt.Errorf("manager: listing owners of %q: %w", topics[i], l.Err)
		}
	}
	return lists, nil
}

// ownedPartitions lists, per topic, the partitions that have an owner node:
// the children lists only, no data reads. For the unowned check.
func ownedPartitions(s *zkconn.Session, group string, topics []string) (map[TopicPartition]bool, error) {
	out := map[TopicPartition]bool{}
	lists, err := listOwners(s, group, topics)
	if err != nil {
		return nil, err
	}
	for i, t := range topics {
		for _, k := range lists[i].Children {
			if p, err := strconv.ParseInt(k, 10, 32); err == nil && p >= 0 {
				out[TopicPartition{Topic: t, Partition: int32(p)}] = true
			}
		}
	}
	return out, nil
}

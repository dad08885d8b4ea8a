package manager

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// readOwners returns who holds each partition of topics, from the owner
// nodes under /consumers/<group>/owners, all read: the topics' owners
// nodes (their stats), their children lists, then the owner nodes' data,
// each in ZooKeeper multiRead batches (zkconn.Session.GetMany and
// ChildrenMany), which ZooKeeper serves in one pass each: at 1,000
// partitions a handful of requests, where a read per node (1,000
// requests, served one after another for the session) kept ZooKeeper
// busy for 80-130 ms idle and over a second under load. A member reads
// through its ownersCache, which reads again only what changed. It sets
// no watch.
//
// A partition with no node is absent from the result; the owner's id is
// the node's text (zkdata.ParseOwner). It writes nothing; noDir lists the
// topics that have no owners node yet, sorted.
func readOwners(r nodeReader, group string, topics []string) (owners map[TopicPartition]string, noDir []string, err error) {
	var oc ownersCache
	return oc.read(r, group, topics, 0, nil)
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
			if p, ok := partitionName(k); ok {
				out[TopicPartition{Topic: t, Partition: p}] = true
			}
		}
	}
	return out, nil
}

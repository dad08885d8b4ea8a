package manager

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

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

package ops

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/retry"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/offsets"
)

// Offsets maps topic -> partition -> committed offset (the next to read).
type Offsets map[string]map[int32]int64

func (o Offsets) set(topic string, p int32, off int64) {
	if o[topic] == nil {
		o[topic] = map[int32]int64{}
	}
	o[topic][p] = off
}

// KafkaCommitted reads every offset group committed to Kafka (an
// OffsetFetch for all partitions). Blocks on the group coordinator.
func KafkaCommitted(admin sarama.ClusterAdmin, group string) (Offsets, error) {
	out := Offsets{}
	err := kafkaBlocks(admin, group, func(topic string, p int32, b *sarama.OffsetFetchResponseBlock) {
		out.set(topic, p, b.Offset)
	})
	return out, err
}

// KafkaClaims reads the fencing token of every offset group committed to
// Kafka (offsets.ParseToken of its metadata: the czxid of the owner node
// of the claim the commit was written under), for the partitions whose
// commit carries one. Blocks on the group coordinator.
func KafkaClaims(admin sarama.ClusterAdmin, group string) (Offsets, error) {
	out := Offsets{}
	err := kafkaBlocks(admin, group, func(topic string, p int32, b *sarama.OffsetFetchResponseBlock) {
		if tok, ok := offsets.ParseToken(b.Metadata); ok {
			out.set(topic, p, tok)
		}
	})
	return out, err
}

// kafkaBlocks reads group's committed offsets from Kafka and calls f for
// each partition that has one.
func kafkaBlocks(admin sarama.ClusterAdmin, group string, f func(topic string, p int32, b *sarama.OffsetFetchResponseBlock)) error {
	resp, err := listOffsets(admin, group)
	if err != nil {
		return fmt.Errorf("ops: offsets of group %q in Kafka: %w", group, err)
	}
	for topic, ps := range resp.Blocks {
		for p, b := range ps {
			if b == nil || b.Err != sarama.ErrNoError || b.Offset < 0 {
				continue
			}
			f(topic, p, b)
		}
	}
	return nil
}

// loadWait bounds how long listOffsets waits for a coordinator that is
// still loading the group's offsets (a broker just started or just made
// coordinator); loadBackoff is its first pause (internal/retry, up to a
// second).
var loadWait, loadBackoff = 30 * time.Second, 50 * time.Millisecond

// listOffsets is an OffsetFetch of every partition of group. A coordinator
// still loading its offsets answers COORDINATOR_LOAD_IN_PROGRESS, which
// sarama does not retry: it is asked again, as Kafka's own tools do, for
// up to loadWait.
func listOffsets(admin sarama.ClusterAdmin, group string) (*sarama.OffsetFetchResponse, error) {
	deadline := time.Now().Add(loadWait)
	bo := retry.New(loadBackoff, time.Second)
	for {
		resp, err := admin.ListConsumerGroupOffsets(group, nil)
		if err == nil && resp.Err != sarama.ErrNoError {
			err = resp.Err
		}
		pause := bo.Next()
		if !errors.Is(err, sarama.ErrOffsetsLoadInProgress) || time.Now().Add(pause).After(deadline) {
			return resp, err
		}
		time.Sleep(pause)
	}
}

// ZooKeeperCommitted reads every offset under /consumers/<group>/offsets.
// A node that does not hold an offset is an error naming it. Blocks on
// ZooKeeper.
func ZooKeeperCommitted(s *zkconn.Session, group string) (Offsets, error) {
	out := Offsets{}
	err := eachPartitionNode(s, zkdata.OffsetsPath(group),
		func(t string) string { return zkdata.OffsetTopicPath(group, t) },
		func(t string, p int32) string { return zkdata.OffsetPath(group, t, p) },
		false, func(t string, p int32, data []byte) error {
			off, err := zkdata.ParseOffset(t, p, data)
			if err != nil {
				return err
			}
			out.set(t, p, off)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Owners reads /consumers/<group>/owners: topic -> partition -> owner id.
// Blocks on ZooKeeper.
func Owners(s *zkconn.Session, group string) (map[string]map[int32]string, error) {
	out := map[string]map[int32]string{}
	err := eachPartitionNode(s, zkdata.OwnersPath(group),
		func(t string) string { return zkdata.OwnerTopicPath(group, t) },
		func(t string, p int32) string { return zkdata.OwnerPath(group, t, p) },
		true, func(t string, p int32, data []byte) error {
			if out[t] == nil {
				out[t] = map[int32]string{}
			}
			out[t][p] = zkdata.ParseOwner(data)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachPartitionNode calls visit with the data of every node
// <dir>/<topic>/<partition> (offsets or owners). A dir, topic or partition
// node missing (or gone meanwhile) is passed over; so is a partition name
// that is not a number when skipBad, and an error otherwise. Blocks on
// ZooKeeper.
func eachPartitionNode(s *zkconn.Session, dir string, topicPath func(t string) string,
	nodePath func(t string, p int32) string, skipBad bool, visit func(t string, p int32, data []byte) error) error {
	topics, err := children(s, dir)
	if err != nil {
		return err
	}
	for _, t := range topics {
		parts, err := children(s, topicPath(t))
		if err != nil {
			return err
		}
		for _, name := range parts {
			p, err := zkdata.ParsePartitionID(name)
			if err != nil {
				if skipBad {
					continue
				}
				return err
			}
			data, _, err := s.Get(nodePath(t, p))
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return fmt.Errorf("ops: reading %s: %w", nodePath(t, p), err)
			}
			if err := visit(t, p, data); err != nil {
				return err
			}
		}
	}
	return nil
}

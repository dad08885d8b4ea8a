package manager

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// ownerReaders bounds the owner-node reads in flight at once; go-zookeeper
// pipelines them on the session's one connection.
const ownerReaders = 128

// readOwners reads who holds each partition of topics, from the owner
// nodes under /consumers/<group>/owners: one children read per topic, then
// one read per owned partition, ownerReaders at a time. A partition with no
// node is absent from the result. The owner's id is the node's text
// (zkdata.ParseOwner). It sets no watch and writes nothing; noDir lists the
// topics that have no owners node yet.
func readOwners(s *zkconn.Session, group string, topics []string) (owners map[TopicPartition]string, noDir []string, err error) {
	type job struct {
		tp   TopicPartition
		path string
	}
	var jobs []job
	for _, t := range topics {
		kids, _, err := s.Children(zkdata.OwnerTopicPath(group, t))
		if errors.Is(err, zk.ErrNoNode) {
			noDir = append(noDir, t)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("manager: listing owners of %q: %w", t, err)
		}
		for _, k := range kids {
			p, err := strconv.ParseInt(k, 10, 32)
			if err != nil || p < 0 {
				continue // not a partition's node
			}
			tp := TopicPartition{Topic: t, Partition: int32(p)}
			jobs = append(jobs, job{tp: tp, path: zkdata.OwnerPath(group, t, tp.Partition)})
		}
	}
	owners = make(map[TopicPartition]string, len(jobs))
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		next = make(chan job)
	)
	for range min(ownerReaders, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				data, _, err := s.Get(j.path)
				mu.Lock()
				switch {
				case err == nil:
					owners[j.tp] = zkdata.ParseOwner(data)
				case errors.Is(err, zk.ErrNoNode): // released meanwhile
				default:
					errs = append(errs, fmt.Errorf("manager: reading %s: %w", j.path, err))
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return nil, nil, errs[0]
	}
	return owners, noDir, nil
}

// ownedPartitions lists, per topic, the partitions that have an owner node:
// one children read per topic, no data reads. For the unowned check.
func ownedPartitions(s *zkconn.Session, group string, topics []string) (map[TopicPartition]bool, error) {
	out := map[TopicPartition]bool{}
	for _, t := range topics {
		kids, _, err := s.Children(zkdata.OwnerTopicPath(group, t))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("manager: listing owners of %q: %w", t, err)
		}
		for _, k := range kids {
			if p, err := strconv.ParseInt(k, 10, 32); err == nil && p >= 0 {
				out[TopicPartition{Topic: t, Partition: int32(p)}] = true
			}
		}
	}
	return out, nil
}

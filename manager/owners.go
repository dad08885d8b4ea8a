package manager

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unique"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// ownerReaders bounds the owner-node reads in flight at once; go-zookeeper
// pipelines them on the session's one connection.
const ownerReaders = 128

// ownerCache knows who holds each partition, from the owner nodes under
// /consumers/<group>/owners, and reads again only the nodes that changed:
// the read that fills an entry sets a data watch on its node, and the
// watch's event (the node deleted or changed, or the session's watches
// dropped) evicts the entry, through one session hook on the owners
// directory (no goroutine, and no hook, per node). A rebalance of a member of a group of 10 on 1,000 partitions thus
// reads the 1,000 owner nodes once, at its first rebalance, and afterwards
// only those claimed since; every member reading all of them at every
// rebalance kept ZooKeeper busy for most of a second. Entries of an ended
// session epoch are dropped (their watches are gone). Safe for concurrent
// use.
type ownerCache struct {
	s      *zkconn.Session
	group  string
	unhook func() // removes the hook on the owners directory

	mu    sync.Mutex
	epoch uint64                       // the session epoch of the entries
	nodes map[TopicPartition]ownerNode // by the owner node's partition
}

// ownerNode is what the cache knows of one owner node. A member caches
// every partition's node of its topics (1,000 of a 1,000-partition
// topic), so it is kept small, in the map itself: the owner id is
// interned (the members are few, the nodes many) and the node's path is
// not kept (go-zookeeper's watch holds it).
type ownerNode struct {
	owner  unique.Handle[string] // valid while cached
	cached bool
	gen    uint64 // events seen: a read is cached only if none came during it
}

func newOwnerCache(s *zkconn.Session, group string) *ownerCache {
	oc := &ownerCache{s: s, group: group, nodes: map[TopicPartition]ownerNode{}}
	// Set before any read: no event of a watch the cache sets is missed.
	oc.unhook = s.OnPrefixEvent(zkdata.OwnersPath(group), oc.onEvent)
	return oc
}

// onEvent evicts the entry of the owner node at rel ("<topic>/<partition>"
// under the owners directory); other nodes' events are ignored.
func (oc *ownerCache) onEvent(rel string, _ zk.Event) {
	i := strings.LastIndexByte(rel, '/')
	if i <= 0 {
		return
	}
	p, err := strconv.ParseInt(rel[i+1:], 10, 32)
	if err != nil || p < 0 {
		return
	}
	oc.evict(TopicPartition{Topic: rel[:i], Partition: int32(p)})
}

// read returns who holds each partition of topics: one children read per
// topic, then one read per owner node not in the cache, ownerReaders at a
// time. A partition with no node is absent from the result. The owner's
// id is the node's text (zkdata.ParseOwner). It writes nothing; noDir
// lists the topics that have no owners node yet.
func (oc *ownerCache) read(topics []string) (owners map[TopicPartition]string, noDir []string, err error) {
	type job struct {
		tp   TopicPartition
		path string
		gen  uint64
	}
	st, _ := oc.s.Epoch()
	oc.mu.Lock()
	if st.Epoch != oc.epoch {
		oc.resetLocked()
		oc.epoch = st.Epoch
	}
	oc.mu.Unlock()
	owners = map[TopicPartition]string{}
	var jobs []job
	for _, t := range topics {
		kids, _, err := oc.s.Children(zkdata.OwnerTopicPath(oc.group, t))
		if errors.Is(err, zk.ErrNoNode) {
			noDir = append(noDir, t)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("manager: listing owners of %q: %w", t, err)
		}
		oc.mu.Lock()
		for _, k := range kids {
			p, err := strconv.ParseInt(k, 10, 32)
			if err != nil || p < 0 {
				continue // not a partition's node
			}
			tp := TopicPartition{Topic: t, Partition: int32(p)}
			n, ok := oc.nodes[tp]
			if !ok {
				oc.nodes[tp] = n
			}
			if n.cached {
				owners[tp] = n.owner.Value()
				continue
			}
			jobs = append(jobs, job{tp: tp, path: zkdata.OwnerPath(oc.group, t, tp.Partition), gen: n.gen})
		}
		oc.mu.Unlock()
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		next = make(chan job)
	)
	for range min(ownerReaders, len(jobs)) {
		wg.Go(func() {
			for j := range next {
				data, _, _, err := oc.s.GetWFull(j.path) // the watch that evicts the entry
				switch {
				case err == nil:
					h := unique.Make(zkdata.ParseOwner(data))
					owner := h.Value()
					oc.mu.Lock()
					if n, ok := oc.nodes[j.tp]; ok && n.gen == j.gen && oc.epoch == st.Epoch {
						n.owner, n.cached = h, true
						oc.nodes[j.tp] = n
					}
					oc.mu.Unlock()
					mu.Lock()
					owners[j.tp] = owner
					mu.Unlock()
				case errors.Is(err, zk.ErrNoNode): // released meanwhile
				default:
					mu.Lock()
					errs = append(errs, fmt.Errorf("manager: reading %s: %w", j.path, err))
					mu.Unlock()
				}
			}
		})
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

// evict drops the entry of tp: its node changed, or the watch ended. It
// runs on the ZooKeeper client's receive goroutine and does not block.
func (oc *ownerCache) evict(tp TopicPartition) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if n, ok := oc.nodes[tp]; ok {
		oc.nodes[tp] = ownerNode{gen: n.gen + 1}
	}
}

// resetLocked drops every entry. oc.mu must be held.
func (oc *ownerCache) resetLocked() { clear(oc.nodes) }

// close removes the cache's hook and entries.
func (oc *ownerCache) close() {
	oc.unhook()
	oc.mu.Lock()
	defer oc.mu.Unlock()
	oc.resetLocked()
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

package manager

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// listedTopic is one topic's owners node as the unowned check last listed
// it: its stat and the partitions below count with no node then.
type listedTopic struct {
	czxid, pzxid int64
	cversion     int32
	count        int
	missing      []int32
}

// unownedListed is unowned for members that compute from the group's
// stored assignment: it needs which partitions have a node, not who holds
// them, so it reads the owners nodes' stats and lists those that changed
// since its last list (two multiRead requests), and reads no owner node. A plan reading the owners
// later does not use what it lists (the cache of owners is apart).
func (oc *ownersCache) unownedListed(r nodeReader, group string, topics []string, epoch uint64,
	counts map[string]int) ([]TopicPartition, error) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if epoch != oc.listedEpoch {
		oc.listed = nil
	}
	oc.listedEpoch = epoch
	dirs := make([]string, len(topics))
	for i, t := range topics {
		dirs[i] = zkdata.OwnerTopicPath(group, t)
	}
	stats, err := r.GetMany(dirs)
	if err != nil {
		return nil, fmt.Errorf("manager: reading the owners nodes of %d topics: %w", len(topics), err)
	}
	kept := make(map[string]*listedTopic, len(topics))
	none := map[string]bool{} // topics without owners node
	var changed []int         // indexes into topics
	for i, t := range topics {
		switch d := stats[i]; {
		case errors.Is(d.Err, zk.ErrNoNode):
			none[t] = true
		case d.Err != nil:
			return nil, fmt.Errorf("manager: reading %s: %w", dirs[i], d.Err)
		default:
			e := oc.listed[t]
			if e != nil && e.czxid == d.Stat.Czxid && e.cversion == d.Stat.Cversion && e.pzxid == d.Stat.Pzxid &&
				e.count == counts[t] {
				kept[t] = e
				continue
			}
			changed = append(changed, i)
		}
	}
	if len(changed) > 0 {
		paths := make([]string, len(changed))
		for k, i := range changed {
			paths[k] = dirs[i]
		}
		// One multiRead for every list, each kept with the stat just
		// read: a change between the stat and the list makes the next
		// check's stat differ and list again, never miss one.
		lists, err := r.ChildrenMany(paths)
		if err != nil {
			return nil, fmt.Errorf("manager: listing owners of %d topics: %w", len(paths), err)
		}
		for k, i := range changed {
			t, l := topics[i], lists[k]
			switch {
			case errors.Is(l.Err, zk.ErrNoNode): // went away: none owned
				none[t] = true
				continue
			case l.Err != nil:
				return nil, fmt.Errorf("manager: listing owners of %q: %w", t, l.Err)
			}
			have := make([]bool, counts[t])
			for _, k := range l.Children {
				if p, ok := partitionName(k); ok && int(p) < len(have) {
					have[p] = true
				}
			}
			st := stats[i].Stat
			e := &listedTopic{czxid: st.Czxid, pzxid: st.Pzxid, cversion: st.Cversion, count: counts[t]}
			for p, ok := range have {
				if !ok {
					e.missing = append(e.missing, int32(p))
				}
			}
			kept[t] = e
		}
	}
	var out []TopicPartition
	for _, t := range topics {
		if none[t] {
			out = appendEvery(out, t, counts[t])
			continue
		}
		if e := kept[t]; e != nil {
			out = appendParts(out, t, e.missing)
		}
	}
	oc.listed = kept
	return out, nil
}

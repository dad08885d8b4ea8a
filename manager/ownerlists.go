package manager

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// listedTopic is one topic's owners node as the unowned check last listed
// it, under a child watch: the partitions below count with no node then.
// Its hook marks it stale when the watch fires (a node came or went, the
// owners node went); until then the list holds.
type listedTopic struct {
	epoch   uint64
	count   int
	missing []int32
	stale   atomic.Bool
	remove  func() // the hook's
}

// listWatcher is what the unowned check lists through (a
// *zkconn.Session).
type listWatcher interface {
	ChildrenWFull(p string) ([]string, *zk.Stat, <-chan zk.Event, error)
	OnNodeEvent(p string, f func(zk.Event)) (remove func())
}

// maxListReads bounds the lists the unowned check has in flight at once.
const maxListReads = 64

// unownedListed is unowned for members that compute from the group's
// stored assignment: it needs which partitions have a node, not who holds
// them. Each topic's owners node is listed with a child watch (no owner
// node is read); a topic whose watch has not fired since is as listed,
// and costs no request. So an idle group's check reads nothing, where
// reading the owners nodes' stats cost every member one request per 256
// topics per check; a changed topic is listed again (one request each,
// up to maxListReads at once). A topic without owners node is listed
// again at each check. A plan reading the owners later does not use what
// it lists (the cache of owners is apart). A new session epoch lists
// everything again.
func (oc *ownersCache) unownedListed(r listWatcher, group string, topics []string, epoch uint64,
	counts map[string]int) ([]TopicPartition, error) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	kept := make(map[string]*listedTopic, len(topics))
	var todo []string
	for _, t := range topics {
		if e := oc.listed[t]; e != nil && e.epoch == epoch && e.count == counts[t] && !e.stale.Load() {
			kept[t] = e
			continue
		}
		todo = append(todo, t)
	}
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, maxListReads)
		fresh = make([]*listedTopic, len(todo))
		kids  = make([][]string, len(todo))
		errs  = make([]error, len(todo))
	)
	for i, t := range todo {
		dir := zkdata.OwnerTopicPath(group, t)
		// The hook is set before the list, so that no change after the
		// list is missed.
		e := &listedTopic{epoch: epoch, count: counts[t]}
		e.remove = r.OnNodeEvent(dir, func(zk.Event) { e.stale.Store(true) })
		fresh[i] = e
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			kids[i], _, _, errs[i] = r.ChildrenWFull(dir)
		})
	}
	wg.Wait()
	none := map[string]bool{} // topics without owners node
	var (
		failed error
		added  []*listedTopic
	)
	for i, t := range todo {
		e := fresh[i]
		switch err := errs[i]; {
		case errors.Is(err, zk.ErrNoNode): // no watch set: listed again next time
			e.remove()
			none[t] = true
			continue
		case err != nil:
			e.remove()
			if failed == nil {
				failed = fmt.Errorf("manager: listing owners of %q: %w", t, err)
			}
			continue
		}
		have := make([]bool, e.count)
		for _, k := range kids[i] {
			if p, ok := partitionName(k); ok && int(p) < len(have) {
				have[p] = true
			}
		}
		for p, ok := range have {
			if !ok {
				e.missing = append(e.missing, int32(p))
			}
		}
		kept[t] = e
		added = append(added, e)
	}
	if failed != nil {
		for _, e := range added {
			e.remove()
		}
		return nil, failed
	}
	for t, e := range oc.listed {
		if kept[t] != e {
			e.remove()
		}
	}
	oc.listed = kept
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
	return out, nil
}

// closeListed removes the hooks of what the unowned check listed.
func (oc *ownersCache) closeListed() {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	for _, e := range oc.listed {
		e.remove()
	}
	oc.listed = nil
}

var _ listWatcher = (*zkconn.Session)(nil)

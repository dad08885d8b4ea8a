package manager

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"unique"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// nodeReader is what the owners are read through: the member's
// zkconn.Session (tests wrap it to count the nodes read).
type nodeReader interface {
	GetMany(paths []string) ([]zkconn.NodeData, error)
	ChildrenMany(paths []string) ([]zkconn.NodeData, error)
	ChildrenStats(paths []string) ([]zkconn.NodeData, error)
}

// ownersCache keeps what the last owners read found per topic, so that a
// rebalance reads again only what changed, checked against ZooKeeper's
// own counters; the layout is the old consumer's and unchanged. Owner
// nodes are only ever created (with the owner's id) and deleted, never
// rewritten, and every create or delete of a child bumps the topic owners
// node's Cversion (and sets its Pzxid). So:
//
//   - A topic whose owners node has the Czxid, Cversion and Pzxid of the
//     cached list has the same owner nodes as then: served from the
//     cache, one stat read per topic (all topics in one GetMany).
//   - A changed topic is listed again, with the stat of that list
//     (getChildren2). Names added are read; so are the names kept whose
//     owner the last assignment expects to change (a move is a delete and
//     a create of the same name: the list does not show it). A node read
//     with a Czxid above the cached Pzxid was created again since. The
//     Cversion grew by exactly one per create or delete: when it grew by
//     added + removed + 2 × re-created, every change is accounted for and
//     each name not read is the node cached; otherwise (or when a node
//     read changed after the list) the topic's other nodes are read too.
//
// A cached topic is the list at its Cversion with each node's owner at
// that moment or later (a node read after the list may have changed
// since): a later owner makes the next read of the topic find more
// changes than it can account for, never fewer, so it is read in full.
//
// The owners it returns are a hint, as any read of them is (they change
// at any time): the assignment's stickiness and the claim-wait check use
// them; a claim is an ephemeral create whatever the read said. The node
// of a partition marked by recheck (a claim that waits) is read at the
// next read of a changed topic, as a node expected to change hands is (a
// topic whose stat is the cached one has every node as cached). A new
// session or another partition count drops everything.
//
// Its zero value is empty and ready; safe for concurrent use (the loop
// reads through it, one read at a time).
type ownersCache struct {
	mu     sync.Mutex     // held for a whole read
	epoch  uint64         // the session epoch of the entries
	counts map[string]int // partitions per topic at the last read
	topics map[string]*topicOwners
	// nodesRead: the nodes the last read fetched (stats, lists, owners).
	nodesRead int
	// listed: what the unowned check listed per topic under the session
	// of listedEpoch, when members compute from the stored assignment
	// (unownedListed).
	listed      map[string]*listedTopic
	listedEpoch uint64

	// Under hintMu, never held across I/O (recheck is called under
	// Consumer.mu): expect, each partition's owner in the last assignment
	// computed (replaced, never changed in place); again, the partitions
	// whose node the next read reads if their topic changed.
	hintMu sync.Mutex
	expect *ownerTable
	again  map[TopicPartition]bool
}

// topicOwners is one topic's owner nodes as read at one moment: the
// owners node's stat, and every child's name with its owner (a partition
// node's text; "" for a child that is not a partition's).
type topicOwners struct {
	czxid, pzxid int64
	cversion     int32
	kids         ownerKids

	// The partitions below missingOf without a node, once asked for
	// (missing). Kept beside kids because an entry's kids never change
	// once it is cached (a changed topic gets a new entry).
	missingOf   int
	missingSet  bool
	missingList []int32
}

// kid returns the owner of e's child named k and whether it exists (none
// when e is nil).
func (e *topicOwners) kid(k string) (string, bool) {
	if e == nil {
		return "", false
	}
	return e.kids.get(k)
}

// missing returns the partitions 0 to count-1 that have no node,
// computed once per entry and count. Called with the cache's mu held.
func (e *topicOwners) missing(count int) []int32 {
	if e == nil { // not cached: none known
		e = &topicOwners{}
	}
	if e.missingSet && e.missingOf == count {
		return e.missingList
	}
	have := make([]bool, count)
	for p := range e.kids.partitions() {
		if int(p) < count {
			have[p] = true
		}
	}
	e.missingList = nil
	for p, ok := range have {
		if !ok {
			e.missingList = append(e.missingList, int32(p))
		}
	}
	e.missingOf, e.missingSet = count, true
	return e.missingList
}

func (e *topicOwners) same(st zk.Stat) bool {
	return e.czxid == st.Czxid && e.cversion == st.Cversion && e.pzxid == st.Pzxid
}

// recheck makes the next read read tp's owner node if tp's topic changed
// since it was cached: a claim of tp found a holder the cache may not
// have. One node, not the topic's: reading the whole topic for each such
// claim made 10 members started together on a topic of 1,000 partitions
// read about half a million nodes.
func (oc *ownersCache) recheck(tp TopicPartition) {
	oc.hintMu.Lock()
	defer oc.hintMu.Unlock()
	if oc.again == nil {
		oc.again = map[TopicPartition]bool{}
	}
	oc.again[tp] = true
}

// expectOwners records the owners the assignment just computed gives the
// partitions: the next read checks those that would change hands.
func (oc *ownersCache) expectOwners(want *ownerTable) {
	oc.hintMu.Lock()
	defer oc.hintMu.Unlock()
	oc.expect = want
}

// lastNodesRead returns the nodes the last read fetched.
func (oc *ownersCache) lastNodesRead() int {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return oc.nodesRead
}

// read returns who holds each partition of topics (the owner's id is the
// node's text, zkdata.ParseOwner; a partition with no node has none) and
// the topics that have no owners node, sorted, reading through r what the cache
// cannot vouch for. epoch is the session's; counts the partitions per
// topic in the metadata: when either differs from the last read's, the
// cache is dropped first.
func (oc *ownersCache) read(r nodeReader, group string, topics []string, epoch uint64,
	counts map[string]int) (owners ownersView, noDir []string, err error) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	noDir, err = oc.update(r, group, topics, epoch, counts)
	if err != nil {
		return nil, nil, err
	}
	return ownersView(oc.topics), noDir, nil
}

// unowned returns the partitions of topics that have no owner node
// (every partition of a topic without owners node), sorted, reading what
// read reads and updating the cache the same way; counts is read's, and
// gives each topic's partitions (0 to count-1). It builds no map of the
// owners: a topic whose stat is the cached one costs its share of one
// stat read and nothing else, which keeps the unowned check cheap at
// thousands of partitions.
func (oc *ownersCache) unowned(r nodeReader, group string, topics []string, epoch uint64,
	counts map[string]int) ([]TopicPartition, error) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	noDir, err := oc.update(r, group, topics, epoch, counts)
	if err != nil {
		return nil, err
	}
	var out []TopicPartition
	for _, t := range topics {
		if _, none := slices.BinarySearch(noDir, t); none {
			out = appendEvery(out, t, counts[t])
			continue
		}
		out = appendParts(out, t, oc.topics[t].missing(counts[t]))
	}
	return out, nil
}

// appendEvery appends partitions 0 to count-1 of topic t to out.
func appendEvery(out []TopicPartition, t string, count int) []TopicPartition {
	for p := range count {
		out = append(out, TopicPartition{Topic: t, Partition: int32(p)})
	}
	return out
}

// appendParts appends partitions ps of topic t to out.
func appendParts(out []TopicPartition, t string, ps []int32) []TopicPartition {
	for _, p := range ps {
		out = append(out, TopicPartition{Topic: t, Partition: p})
	}
	return out
}

// update brings the cache up to date for topics (see read) and returns
// the topics without owners node, sorted. Called with mu held.
func (oc *ownersCache) update(r nodeReader, group string, topics []string, epoch uint64,
	counts map[string]int) (noDir []string, err error) {
	if epoch != oc.epoch || !maps.Equal(counts, oc.counts) {
		oc.topics = nil
	}
	oc.epoch, oc.counts = epoch, counts
	oc.hintMu.Lock()
	rd := ownersRead{r: r, group: group, counts: counts, expect: oc.expect, again: oc.again}
	oc.again = nil // rechecks from now on are for the next read
	oc.hintMu.Unlock()
	noDir, kept, err := rd.run(topics, oc.topics)
	oc.nodesRead = rd.nodes
	if err != nil {
		oc.topics = nil // and the next read reads everything
		return nil, err
	}
	oc.topics = kept
	return noDir, nil
}

// ownersRead is one read of the owners through a cache.
type ownersRead struct {
	r      nodeReader
	group  string
	counts map[string]int // partitions per topic: the slots of ownerKids
	expect *ownerTable
	again  map[TopicPartition]bool
	nodes  int
}

// topicRead is one topic's part of an ownersRead.
type topicRead struct {
	topic  string
	dir    string
	listed zk.Stat      // the owners node's, with its list
	base   *topicOwners // nil: every node is read
	kids   []string
	owners ownerKids // the children's owners: cached or read
	unread []string  // partition nodes whose owner is the cached one
	// diff: the names added and removed since base; recreated: the nodes
	// read that were created again since base (and before the list);
	// unsure: a node read changed after the list, which the count of
	// changes cannot place.
	diff      int
	recreated int
	unsure    bool
	gone      bool // the owners node went away
}

func (rd *ownersRead) getMany(paths []string) ([]zkconn.NodeData, error) {
	rd.nodes += len(paths)
	return rd.r.GetMany(paths)
}

// run reads what cached cannot vouch for and returns the topics without
// owners node and the new cache.
func (rd *ownersRead) run(topics []string, cached map[string]*topicOwners) (
	noDir []string, kept map[string]*topicOwners, err error) {
	dirs := make([]string, len(topics))
	for i, t := range topics {
		dirs[i] = zkdata.OwnerTopicPath(rd.group, t)
	}
	stats, err := rd.getMany(dirs)
	if err != nil {
		return nil, nil, fmt.Errorf("manager: reading the owners nodes of %d topics: %w", len(topics), err)
	}
	kept = map[string]*topicOwners{}
	var work []*topicRead
	for i, t := range topics {
		switch d := stats[i]; {
		case errors.Is(d.Err, zk.ErrNoNode):
			noDir = append(noDir, t)
		case d.Err != nil:
			return nil, nil, fmt.Errorf("manager: reading %s: %w", dirs[i], d.Err)
		default:
			e := cached[t]
			if e != nil && e.czxid != d.Stat.Czxid {
				e = nil
			}
			if e != nil && e.same(d.Stat) {
				kept[t] = e
				continue
			}
			work = append(work, &topicRead{topic: t, dir: dirs[i], base: e})
		}
	}
	if len(work) > 0 {
		if err := rd.readChanged(work); err != nil {
			return nil, nil, err
		}
	}
	for _, w := range work {
		if w.gone {
			noDir = append(noDir, w.topic)
			continue
		}
		kept[w.topic] = &topicOwners{czxid: w.listed.Czxid, pzxid: w.listed.Pzxid, cversion: w.listed.Cversion, kids: w.owners}
	}
	slices.Sort(noDir)
	return noDir, kept, nil
}

// readChanged lists the topics of work and reads the nodes they need:
// first those added or expected to have changed hands, then, for a topic
// where that does not account for every change, the others.
func (rd *ownersRead) readChanged(work []*topicRead) error {
	dirs := make([]string, len(work))
	for i, w := range work {
		dirs[i] = w.dir
	}
	rd.nodes += len(dirs)
	lists, err := rd.r.ChildrenStats(dirs)
	if err != nil {
		return fmt.Errorf("manager: listing owners of %d topics: %w", len(work), err)
	}
	first := make([][]string, len(work)) // per topic: the names to read now
	for i, w := range work {
		switch l := lists[i]; {
		case errors.Is(l.Err, zk.ErrNoNode):
			w.gone = true
		case l.Err != nil:
			return fmt.Errorf("manager: listing owners of %q: %w", w.topic, l.Err)
		default:
			w.kids, w.listed = l.Children, l.Stat
			if w.base != nil && w.base.czxid != w.listed.Czxid {
				w.base = nil // another owners node of the same name
			}
			first[i] = rd.plan(w)
		}
	}
	if err := rd.readNodes(work, first); err != nil {
		return err
	}
	rest := make([][]string, len(work))
	for i, w := range work {
		if w.gone {
			continue
		}
		if w.base != nil && !w.unsure && w.accounted() {
			for _, k := range w.unread {
				owner, _ := w.base.kids.get(k)
				w.owners.set(k, owner)
			}
		} else {
			rest[i] = w.unread
		}
		w.unread = nil
	}
	return rd.readNodes(work, rest)
}

// plan returns the partition nodes of w to read first and sets w.unread
// to those whose cached owner may stand, and w.diff. Without a base it
// reads them all.
func (rd *ownersRead) plan(w *topicRead) (read []string) {
	w.owners = newOwnerKids(rd.counts[w.topic])
	common := 0
	for _, k := range w.kids {
		p, isPart := partitionName(k)
		was, had := "", false
		if w.base != nil {
			was, had = w.base.kids.get(k)
			if had {
				common++
			} else {
				w.diff++ // added
			}
		}
		switch {
		case !isPart:
			w.owners.set(k, "")
		case !had:
			read = append(read, k)
		case rd.expect.owner(TopicPartition{Topic: w.topic, Partition: p}) != was,
			rd.again[TopicPartition{Topic: w.topic, Partition: p}]:
			read = append(read, k) // expected to change hands, or a claim found it held
		default:
			w.unread = append(w.unread, k)
		}
	}
	if w.base != nil {
		w.diff += w.base.kids.len() - common // removed
	}
	return read
}

// accounted reports whether the owners node's Cversion grew by exactly
// the creates and deletes seen: one per name added or removed since base,
// two per node read that was created again since.
func (w *topicRead) accounted() bool {
	return int64(w.listed.Cversion)-int64(w.base.cversion) == int64(w.diff)+2*int64(w.recreated)
}

// readNodes reads names[i] of each work[i], all in one GetMany, and
// records what they say in work.
func (rd *ownersRead) readNodes(work []*topicRead, names [][]string) error {
	var (
		paths []string
		who   []*topicRead
		what  []string // the child's name
	)
	for i, w := range work {
		for _, k := range names[i] {
			paths = append(paths, w.dir+"/"+k)
			who, what = append(who, w), append(what, k)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	got, err := rd.getMany(paths)
	if err != nil {
		return fmt.Errorf("manager: reading the owners of %d partitions: %w", len(paths), err)
	}
	for i, g := range got {
		w, k := who[i], what[i]
		switch {
		case errors.Is(g.Err, zk.ErrNoNode): // released since the list
			w.owners.del(k)
			w.unsure = true
		case g.Err != nil:
			return fmt.Errorf("manager: reading %s: %w", paths[i], g.Err)
		default:
			// Interned: a member's cache holds an owner per partition
			// of the group, of a few distinct ids.
			w.owners.set(k, unique.Make(zkdata.ParseOwner(g.Data)).Value())
			if g.Stat.Czxid > w.listed.Pzxid {
				w.unsure = true // created again since the list
			} else if _, had := w.base.kid(k); had && g.Stat.Czxid > w.base.pzxid {
				w.recreated++ // deleted and created again between base and the list
			}
		}
	}
	return nil
}

// ownersView is who held each partition at an ownersCache read: the
// cache's entries of that read, which are never changed once cached.
type ownersView map[string]*topicOwners

// owner returns tp's owner ("" none).
func (v ownersView) owner(tp TopicPartition) string {
	e := v[tp.Topic]
	if e == nil {
		return ""
	}
	o, _ := e.kids.partition(tp.Partition)
	return o
}

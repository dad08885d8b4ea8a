package metadata

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync/atomic"
)

// refresher reads the parts of the view that are stale: the topic list when
// its child watch fired, the nodes of the selected topics whose data watch
// fired or that were not read yet, and everything (topic list and selected
// topic nodes) on a resync. It arms each watch only when none is pending
// for its node, so that at most one watch per node is armed. It never
// reads a partition state node. It is owned by one goroutine at a time
// (not safe for concurrent use).
type refresher struct {
	st  store
	log *slog.Logger

	topicsArmed bool            // the child watch on the topic list is pending
	armed       map[string]bool // topics with a pending data watch

	listStale bool              // the topic list must be read again
	resync    bool              // the next refresh reads everything
	stale     map[string]bool   // topic nodes to read again (their watch fired)
	known     map[string]bool   // selected topics whose node the view holds (malformed ones included)
	malformed map[string]string // path -> error text of each malformed node, so that each is logged once
	// versions: the version (nodeRead) of the node each selected topic's
	// partitions in the view were built from; a resync does not decode a
	// node still at it.
	versions map[string]int64
	// unarmed: topics read (in a batch) that need a data watch, which
	// arm sets afterwards.
	unarmed map[string]bool

	reads int // reads of the store by the last refresh

	onMalformed func(error) // nil: none
}

func newRefresher(st store, log *slog.Logger) *refresher {
	return &refresher{
		st: st, log: log, listStale: true,
		armed: map[string]bool{}, stale: map[string]bool{},
		known: map[string]bool{}, malformed: map[string]string{}, versions: map[string]int64{},
		unarmed: map[string]bool{},
	}
}

// release marks the watches of keys as fired: their nodes are stale and are
// read, with a new watch, by the next refresh (a topic's only if it is
// still selected then).
func (r *refresher) release(keys []watchKey) {
	for _, k := range keys {
		if k.root {
			r.topicsArmed = false
			r.listStale = true
		} else {
			delete(r.armed, k.topic)
			r.stale[k.topic] = true
		}
	}
}

// markResync makes the next refresh read the topic list and every selected
// topic node. A node it fails to read stays stale, so the refreshes that
// follow read it again (and the list, until it was read once).
func (r *refresher) markResync() { r.resync = true }

// refresh brings the view up to date with what is stale and returns the
// new view, built from prev and the nodes it read; with prev nil (the
// first refresh) it reads the topic list and every selected topic node. It returns nil and the error when
// the topic list cannot be read. Otherwise it returns a view even when some
// reads failed: a topic whose node could not be read keeps its partitions
// from prev and stays stale, and the error joins the failures. Malformed
// nodes and nodes that vanish are not errors. stop aborts the remaining
// reads. Topics the filter no longer selects lose their partitions without
// a read; newly selected ones are read.
func (r *refresher) refresh(filter func(string) bool, prev map[string][]Partition, stop func() bool) (map[string][]Partition, error) {
	r.reads = 0
	var names []string
	if r.resync || r.listStale || prev == nil {
		list, armed, err := r.st.topics(!r.topicsArmed)
		r.reads++
		r.topicsArmed = r.topicsArmed || armed
		if err != nil {
			if errors.Is(err, errNoNode) {
				return nil, fmt.Errorf("%w: %s does not exist", ErrNoCluster, topicsPath)
			}
			return nil, &ReadError{Path: topicsPath, Err: err}
		}
		r.listStale = false
		sort.Strings(list)
		names = slices.Compact(list)
	} else {
		names = slices.Sorted(maps.Keys(prev))
	}

	next := make(map[string][]Partition, len(names))
	selected := make(map[string]bool, len(names))
	var toRead []string
	for _, n := range names {
		next[n] = nil
		if !filter(n) {
			continue
		}
		selected[n] = true
		if r.resync {
			r.stale[n] = true
		}
		if r.stale[n] || !r.known[n] {
			toRead = append(toRead, n)
		} else {
			next[n] = prev[n]
		}
	}
	r.resync = false // what it asked for is stale now, until read
	// Forget what is no longer listed or selected.
	for t := range r.known {
		if !selected[t] {
			delete(r.known, t)
			delete(r.malformed, topicPath(t))
			delete(r.versions, t)
		}
	}
	for t := range r.stale {
		if !selected[t] {
			delete(r.stale, t)
		}
	}
	for t := range r.unarmed {
		if !selected[t] {
			delete(r.unarmed, t)
		}
	}

	var failed atomic.Bool
	halt := func() bool { return failed.Load() || stop() }
	type topicRead struct {
		parts   []partMeta
		armed   bool
		err     error
		version int64
		same    bool // unchanged since prev's partitions were built: prev's stand
	}
	// A node whose watch is still armed (a resync's) is read with the
	// others in one request; one that needs a watch is read on its own
	// (getData with a watch), readWorkers at a time. When more than
	// readWorkers need one (a start, a resync after a new session) they
	// are read in the batch too and left to arm, which sets their watches
	// after the view is published: at 100 topics under load those reads
	// took a member's start 1.2 s where the batch takes one round trip.
	var batch, single []int
	for i, t := range toRead {
		if r.armed[t] {
			batch = append(batch, i)
		} else {
			single = append(single, i)
		}
	}
	if len(single) > readWorkers {
		for _, i := range single {
			r.unarmed[toRead[i]] = true
		}
		batch = append(batch, single...)
		single = nil
	}
	reads := make([]topicRead, len(toRead))
	ran := make([]bool, len(toRead))
	note := func(i int) {
		if err := reads[i].err; err != nil && !errors.Is(err, errNoNode) && !isMalformed(err) {
			failed.Store(true)
		}
	}
	if len(batch) > 0 && !halt() {
		names := make([]string, len(batch))
		had := make([]int64, len(batch))
		for j, i := range batch {
			names[j] = toRead[i]
			if prev[names[j]] != nil {
				had[j] = r.versions[names[j]]
			}
		}
		got, err := r.st.partitionsMany(names, had)
		for j, i := range batch {
			if err != nil {
				reads[i].err = err
			} else {
				g := got[j]
				reads[i].parts, reads[i].err, reads[i].version, reads[i].same = g.parts, g.err, g.version, g.same
			}
			ran[i] = true
			note(i)
		}
	}
	ranSingle := forEach(len(single), readWorkers, halt, func(j int) {
		i := single[j]
		rd := &reads[i]
		rd.parts, rd.version, rd.armed, rd.err = r.st.partitions(toRead[i], true, 0)
		note(i)
	})
	for j, i := range single {
		ran[i] = ranSingle[j]
	}
	var errs []error
	for i, t := range toRead {
		rd := reads[i]
		if rd.armed {
			r.armed[t] = true
			delete(r.unarmed, t)
		}
		if !ran[i] {
			next[t] = prev[t]
			r.stale[t] = true
			continue
		}
		r.reads++
		switch {
		case rd.err == nil && rd.same:
			next[t] = prev[t]
			delete(r.stale, t)
		case rd.err == nil:
			next[t] = buildPartitions(t, rd.parts)
			r.versions[t] = rd.version
			r.known[t] = true
			delete(r.stale, t)
			delete(r.malformed, topicPath(t))
		case errors.Is(rd.err, errNoNode):
			// Deleted since the list was read; the list's watch fires too.
			delete(r.unarmed, t)
			delete(r.versions, t)
			delete(next, t)
			delete(r.known, t)
			delete(r.stale, t)
			delete(r.malformed, topicPath(t))
		case isMalformed(rd.err):
			delete(r.versions, t)
			r.known[t] = true // read again when its watch fires
			delete(r.stale, t)
			r.noteMalformed(topicPath(t), rd.err)
		default:
			errs = append(errs, &ReadError{Path: topicPath(t), Err: rd.err})
			next[t] = prev[t]
			r.stale[t] = true
		}
	}
	if stop() {
		errs = append(errs, ErrClosed)
	}
	return next, errors.Join(errs...)
}

// arm sets the data watch of each topic read without one (unarmed), with
// a read per node, readWorkers at a time, until stop reports true. A node
// whose data is not what the view was built from (it changed between the
// two reads, it is gone, or the read failed) is marked stale: stale
// reports whether any was, and the next refresh reads it again. A node
// whose watch could not be set stays unarmed; err joins the reads that
// failed (the caller retries after a backoff, as after a failed refresh).
func (r *refresher) arm(stop func() bool) (stale bool, err error) {
	if len(r.unarmed) == 0 {
		return false, nil
	}
	topics := slices.Sorted(maps.Keys(r.unarmed))
	type armRead struct {
		version int64
		armed   bool
		err     error
	}
	reads := make([]armRead, len(topics))
	ran := forEach(len(topics), readWorkers, stop, func(i int) {
		rd := &reads[i]
		// Only the version is compared: a node at the view's is not
		// decoded again (at start, every node was just read in a batch).
		_, rd.version, rd.armed, rd.err = r.st.partitions(topics[i], true, r.versions[topics[i]])
	})
	var errs []error
	for i, t := range topics {
		if !ran[i] {
			continue
		}
		rd := reads[i]
		if rd.armed {
			r.armed[t] = true
			delete(r.unarmed, t)
		}
		switch {
		case errors.Is(rd.err, errNoNode):
			delete(r.unarmed, t) // the list's watch fires too
		case rd.err != nil && !isMalformed(rd.err):
			errs = append(errs, &ReadError{Path: topicPath(t), Err: rd.err})
		}
		if rd.err != nil || rd.version != r.versions[t] {
			r.stale[t] = true
			stale = true
		}
	}
	return stale, errors.Join(errs...)
}

// noteMalformed records a malformed node and logs it unless the same error
// was logged for it before.
func (r *refresher) noteMalformed(path string, err error) {
	text := err.Error()
	if r.malformed[path] != text {
		me := &MalformedError{Path: path, Err: err}
		r.log.Warn("metadata: skipping malformed znode", "path", path, "error", me)
		if r.onMalformed != nil {
			r.onMalformed(me)
		}
	}
	r.malformed[path] = text
}

// buildPartitions turns a topic node's partitions into a view's, sorted by
// ID, each led by its preferred leader. It is pure.
func buildPartitions(topic string, parts []partMeta) []Partition {
	out := make([]Partition, 0, len(parts))
	for _, pm := range parts {
		out = append(out, Partition{Topic: topic, ID: pm.ID, Leader: PreferredLeader(pm.Replicas), Replicas: slices.Clone(pm.Replicas)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

const topicsPath = "/brokers/topics"

func topicPath(topic string) string { return topicsPath + "/" + topic }

package metadata

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync/atomic"
)

// refresher reads the view from a store, arming each watch only when none
// is pending for its node, so that at most one watch per node is armed. It
// is owned by one goroutine at a time (not safe for concurrent use).
type refresher struct {
	st          store
	log         *slog.Logger
	topicsArmed bool
	armed       map[string]bool   // topics with a pending data watch
	malformed   map[string]string // path -> error text, so each is logged once
}

func newRefresher(st store, log *slog.Logger) *refresher {
	return &refresher{st: st, log: log, armed: map[string]bool{}, malformed: map[string]string{}}
}

// release marks the watches of keys as fired: their nodes are read with a
// new watch on the next refresh.
func (r *refresher) release(keys []watchKey) {
	for _, k := range keys {
		if k.root {
			r.topicsArmed = false
		} else {
			delete(r.armed, k.topic)
		}
	}
}

// leaderJob is one partition whose leader a refresh reads.
type leaderJob struct {
	topic string
	idx   int // index into the topic's partitions in the new view
}

// refresh reads the whole view: the topic list, the partitions of the
// topics filter selects, and their leaders. It returns nil and the error
// when the topic list cannot be read. Otherwise it returns a new view even
// when some reads failed: the parts it could not read are taken from prev,
// and the error joins the failures. Malformed nodes and nodes that vanish
// are not errors. stop aborts the remaining reads.
func (r *refresher) refresh(filter func(string) bool, prev map[string][]Partition, stop func() bool) (map[string][]Partition, error) {
	names, armed, err := r.st.topics(!r.topicsArmed)
	r.topicsArmed = r.topicsArmed || armed
	if err != nil {
		if errors.Is(err, errNoNode) {
			return nil, fmt.Errorf("%w: %s does not exist", ErrNoCluster, topicsPath)
		}
		return nil, &ReadError{Path: topicsPath, Err: err}
	}
	sort.Strings(names)
	names = slices.Compact(names)
	next := make(map[string][]Partition, len(names))
	var selected []string
	for _, n := range names {
		next[n] = nil
		if filter(n) {
			selected = append(selected, n)
		}
	}

	var failed atomic.Bool
	halt := func() bool { return failed.Load() || stop() }
	seen := map[string]string{}

	// Partition lists.
	type topicRead struct {
		parts []partMeta
		armed bool
		err   error
	}
	watch := make([]bool, len(selected))
	for i, t := range selected {
		watch[i] = !r.armed[t]
	}
	reads := make([]topicRead, len(selected))
	ran := forEach(len(selected), readWorkers, halt, func(i int) {
		rd := &reads[i]
		rd.parts, rd.armed, rd.err = r.st.partitions(selected[i], watch[i])
		if rd.err != nil && !errors.Is(rd.err, errNoNode) && !isMalformed(rd.err) {
			failed.Store(true)
		}
	})
	var errs []error
	var jobs []leaderJob
	for i, t := range selected {
		rd := reads[i]
		if rd.armed {
			r.armed[t] = true
		}
		switch {
		case !ran[i]:
			next[t] = prev[t]
		case rd.err == nil:
			next[t] = buildPartitions(t, rd.parts, prev[t])
			for j := range next[t] {
				jobs = append(jobs, leaderJob{topic: t, idx: j})
			}
		case errors.Is(rd.err, errNoNode):
			delete(next, t) // deleted since the list was read
		case isMalformed(rd.err):
			r.noteMalformed(seen, topicsPath+"/"+t, rd.err)
		default:
			errs = append(errs, &ReadError{Path: topicsPath + "/" + t, Err: rd.err})
			next[t] = prev[t]
		}
	}

	// Leaders, written into the freshly built partition slices only.
	lerrs := make([]error, len(jobs))
	forEach(len(jobs), readWorkers, halt, func(i int) {
		p := &next[jobs[i].topic][jobs[i].idx]
		l, err := r.st.leader(p.Topic, p.ID)
		switch {
		case err == nil:
			p.Leader = l
		case errors.Is(err, errNoNode):
			p.Leader = -1
		case isMalformed(err):
			p.Leader = -1
			lerrs[i] = err
		default:
			lerrs[i] = err
			failed.Store(true)
		}
	})
	for i, err := range lerrs {
		if err == nil {
			continue
		}
		path := statePath(jobs[i].topic, next[jobs[i].topic][jobs[i].idx].ID)
		if isMalformed(err) {
			r.noteMalformed(seen, path, err)
		} else {
			errs = append(errs, &ReadError{Path: path, Err: err})
		}
	}
	if stop() {
		errs = append(errs, ErrClosed)
	}
	r.malformed = seen
	return next, errors.Join(errs...)
}

// noteMalformed records a malformed node and logs it unless the previous
// refresh logged the same error.
func (r *refresher) noteMalformed(seen map[string]string, path string, err error) {
	text := err.Error()
	seen[path] = text
	if r.malformed[path] != text {
		r.log.Warn("metadata: skipping malformed znode", "path", path, "error", &MalformedError{Path: path, Err: err})
	}
}

// buildPartitions turns a topic node's partitions into a view's, sorted by
// ID, with the leaders of prev (or -1) until the new ones are read. It is
// pure.
func buildPartitions(topic string, parts []partMeta, prev []Partition) []Partition {
	old := make(map[int32]int32, len(prev))
	for _, p := range prev {
		old[p.ID] = p.Leader
	}
	out := make([]Partition, 0, len(parts))
	for _, pm := range parts {
		l, ok := old[pm.ID]
		if !ok {
			l = -1
		}
		out = append(out, Partition{Topic: topic, ID: pm.ID, Leader: l, Replicas: slices.Clone(pm.Replicas)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

const topicsPath = "/brokers/topics"

func statePath(topic string, id int32) string {
	return fmt.Sprintf("%s/%s/partitions/%d/state", topicsPath, topic, id)
}

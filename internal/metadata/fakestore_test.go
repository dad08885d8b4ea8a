package metadata

import (
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"sync"
)

// fakeStore is an in-memory store. Watches are recorded per key; fire
// releases them as ZooKeeper would. It counts the reads it serves. It holds
// partition state (live leaders) too, which the store interface cannot
// read: a test sets it to check that it never matters. Safe for concurrent
// use.
type fakeStore struct {
	mu        sync.Mutex
	topicErr  error
	topicList []string
	parts     map[string][]partMeta
	partErr   map[string]error
	state     map[string]map[int32]int32 // live leaders, as the state nodes hold them
	armed     map[watchKey]int           // pending watches per key
	arms      int                        // watches armed in total
	listReads int                        // topics calls
	nodeReads map[string]int             // partitions calls per topic (partitionsMany's included)
	manyReads int                        // partitionsMany calls
	decodes   int                        // topic nodes read and not found unchanged (the reads' had)
	zxid      int64                      // the last change's
	mzxid     map[string]int64           // per topic: zxid of the last change of its partitions
	closed    bool
	calls     chan struct{} // if set, receives (without blocking) at every topics call
}

func newFakeStore() *fakeStore {
	return &fakeStore{
		parts:     map[string][]partMeta{},
		partErr:   map[string]error{},
		state:     map[string]map[int32]int32{},
		armed:     map[watchKey]int{},
		nodeReads: map[string]int{},
		mzxid:     map[string]int64{},
	}
}

// changed notes a change of topic's node. f.mu held.
func (f *fakeStore) changed(topic string) {
	f.zxid++
	f.mzxid[topic] = f.zxid
}

// addTopic adds a topic with one partition per preferred leader, each
// replicated on its preferred leader and on leader+1, and led by its
// preferred leader.
func (f *fakeStore) addTopic(name string, preferred ...int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topicList = append(f.topicList, name)
	f.parts[name] = nil
	f.changed(name)
	f.state[name] = map[int32]int32{}
	for i, l := range preferred {
		f.parts[name] = append(f.parts[name], partMeta{ID: int32(i), Replicas: []int32{l, l + 1}})
		f.state[name][int32(i)] = l
	}
}

func (f *fakeStore) removeTopic(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topicList = slices.DeleteFunc(f.topicList, func(t string) bool { return t == name })
	delete(f.parts, name)
	delete(f.mzxid, name)
	delete(f.state, name)
}

// setReplicas replaces the replica list of a partition, adding it when it
// is new.
func (f *fakeStore) setReplicas(topic string, id int32, replicas ...int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changed(topic)
	for i, p := range f.parts[topic] {
		if p.ID == id {
			f.parts[topic][i].Replicas = replicas
			return
		}
	}
	f.parts[topic] = append(f.parts[topic], partMeta{ID: id, Replicas: replicas})
}

// setLeader changes a partition's live leader (its state node).
func (f *fakeStore) setLeader(topic string, id, leader int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state[topic][id] = leader
}

// reads returns the topic list reads and the topic node reads so far.
func (f *fakeStore) reads() (list int, nodes map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.nodeReads))
	for k, v := range f.nodeReads {
		out[k] = v
	}
	return f.listReads, out
}

func (f *fakeStore) topics(watch bool) ([]string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listReads++
	if f.calls != nil {
		select {
		case f.calls <- struct{}{}:
		default:
		}
	}
	if f.topicErr != nil {
		return nil, false, f.topicErr
	}
	if watch {
		f.armed[watchKey{root: true}]++
		f.arms++
	}
	out := append([]string(nil), f.topicList...)
	sort.Sort(sort.Reverse(sort.StringSlice(out))) // any order
	return out, watch, nil
}

func (f *fakeStore) partitions(topic string, watch bool, had int64) ([]partMeta, int64, bool, error) {
	parts, version, armed, err := f.read(topic, watch)
	if err != nil {
		return parts, version, armed, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if had != 0 && had == version {
		return nil, version, armed, nil
	}
	f.decodes++
	return parts, version, armed, nil
}

// read is a node's read, decoded.
func (f *fakeStore) read(topic string, watch bool) ([]partMeta, int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodeReads[topic]++
	if err := f.partErr[topic]; err != nil {
		return nil, 0, false, err
	}
	ps, ok := f.parts[topic]
	if !ok {
		return nil, 0, false, errNoNode
	}
	if watch {
		f.armed[watchKey{topic: topic}]++
		f.arms++
	}
	out := make([]partMeta, len(ps))
	for i, p := range ps {
		out[i] = partMeta{ID: p.ID, Replicas: slices.Clone(p.Replicas)}
	}
	return out, f.mzxid[topic], watch, nil
}

func (f *fakeStore) partitionsMany(topics []string, had []int64) ([]nodeRead, error) {
	f.mu.Lock()
	f.manyReads++
	f.mu.Unlock()
	out := make([]nodeRead, len(topics))
	for i, t := range topics {
		out[i].parts, out[i].version, _, out[i].err = f.read(t, false)
		if out[i].err != nil {
			continue
		}
		f.mu.Lock()
		if had != nil && had[i] != 0 && had[i] == out[i].version {
			out[i].parts, out[i].same = nil, true
		} else {
			f.decodes++
		}
		f.mu.Unlock()
	}
	return out, nil
}

func (f *fakeStore) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// fire releases the pending watches of k and returns the keys released.
func (f *fakeStore) fire(k watchKey) []watchKey {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.armed[k]
	delete(f.armed, k)
	out := make([]watchKey, n)
	for i := range out {
		out[i] = k
	}
	return out
}

func (f *fakeStore) pending(k watchKey) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.armed[k]
}

// errConn stands for a connection loss.
var errConn = errors.New("zk: connection closed")

// jsonErr returns a real decoding error.
func jsonErr() error {
	var v map[string]any
	return json.Unmarshal([]byte("{not json"), &v)
}

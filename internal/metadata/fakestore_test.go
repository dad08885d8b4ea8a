package metadata

import (
	"encoding/json"
	"errors"
	"sort"
	"sync"
)

// fakeStore is an in-memory store. Watches are recorded per key; fire
// releases them as ZooKeeper would. Safe for concurrent use.
type fakeStore struct {
	mu        sync.Mutex
	topicErr  error
	topicList []string
	parts     map[string][]partMeta
	partErr   map[string]error
	leaders   map[string]map[int32]int32
	leaderErr map[string]error // by state path
	armed     map[watchKey]int // pending watches per key
	arms      int              // watches armed in total
	closed    bool
	calls     chan struct{} // if set, receives (without blocking) at every topics call
}

func newFakeStore() *fakeStore {
	return &fakeStore{
		parts:     map[string][]partMeta{},
		partErr:   map[string]error{},
		leaders:   map[string]map[int32]int32{},
		leaderErr: map[string]error{},
		armed:     map[watchKey]int{},
	}
}

func (f *fakeStore) addTopic(name string, leaders ...int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topicList = append(f.topicList, name)
	f.parts[name] = nil
	f.leaders[name] = map[int32]int32{}
	for i, l := range leaders {
		f.parts[name] = append(f.parts[name], partMeta{ID: int32(i), Replicas: []int32{l}})
		f.leaders[name][int32(i)] = l
	}
}

func (f *fakeStore) removeTopic(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, t := range f.topicList {
		if t == name {
			f.topicList = append(f.topicList[:i], f.topicList[i+1:]...)
			break
		}
	}
	delete(f.parts, name)
	delete(f.leaders, name)
}

func (f *fakeStore) topics(watch bool) ([]string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
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

func (f *fakeStore) partitions(topic string, watch bool) ([]partMeta, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.partErr[topic]; err != nil {
		return nil, false, err
	}
	ps, ok := f.parts[topic]
	if !ok {
		return nil, false, errNoNode
	}
	if watch {
		f.armed[watchKey{topic: topic}]++
		f.arms++
	}
	return append([]partMeta(nil), ps...), watch, nil
}

func (f *fakeStore) leader(topic string, id int32) (int32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.leaderErr[statePath(topic, id)]; err != nil {
		return -1, err
	}
	l, ok := f.leaders[topic][id]
	if !ok {
		return -1, errNoNode
	}
	return l, nil
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

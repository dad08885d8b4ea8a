package offsets

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// fakeZK is an in-memory ZNodes with ZooKeeper's version semantics. Hooks
// run without the lock, before the operation, so a test can interleave
// another writer exactly there. Safe for concurrent use.
type fakeZK struct {
	mu     sync.Mutex
	nodes  map[string]*fakeNode
	writes map[string][]string // successful writes of data per path, in order
	stale  int                 // Sets refused with ErrBadVersion

	beforeSet    func(path string)
	beforeCreate func(path string)
	getErr       error
	setErr       error
	createErr    error
	multiErr     error
	multis       []int // ops of each Multi call
}

type fakeNode struct {
	data    []byte
	version int32
}

func newFakeZK() *fakeZK {
	return &fakeZK{nodes: map[string]*fakeNode{}, writes: map[string][]string{}}
}

func (f *fakeZK) Get(path string) ([]byte, *zk.Stat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.getErr != nil {
		return nil, nil, f.getErr
	}
	n, ok := f.nodes[path]
	if !ok {
		return nil, nil, zk.ErrNoNode
	}
	return append([]byte(nil), n.data...), &zk.Stat{Version: n.version}, nil
}

func (f *fakeZK) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	if f.beforeSet != nil {
		f.beforeSet(path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.setErr != nil {
		return nil, f.setErr
	}
	n, ok := f.nodes[path]
	if !ok {
		return nil, zk.ErrNoNode
	}
	if version != -1 && version != n.version {
		f.stale++
		return nil, zk.ErrBadVersion
	}
	n.data = append([]byte(nil), data...)
	n.version++
	f.writes[path] = append(f.writes[path], string(data))
	return &zk.Stat{Version: n.version}, nil
}

func (f *fakeZK) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if f.beforeCreate != nil {
		f.beforeCreate(path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.createErr != nil {
		return "", f.createErr
	}
	if flags != 0 {
		return "", fmt.Errorf("fake: unexpected flags %d", flags)
	}
	if len(acl) == 0 {
		return "", zk.ErrInvalidACL
	}
	if _, ok := f.nodes[path]; ok {
		return "", zk.ErrNodeExists
	}
	if parent := path[:strings.LastIndexByte(path, '/')]; parent != "" {
		if _, ok := f.nodes[parent]; !ok {
			return "", zk.ErrNoNode
		}
	}
	f.nodes[path] = &fakeNode{data: append([]byte(nil), data...)}
	f.writes[path] = append(f.writes[path], string(data))
	return path, nil
}

// Multi applies SetDataRequests as one transaction: all or none. On a
// failure the failing op's response has its error, the others
// zk.ErrAPIError, and the call returns the failing op's error.
func (f *fakeZK) Multi(ops ...any) ([]zk.MultiResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.multis = append(f.multis, len(ops))
	if f.multiErr != nil {
		return nil, f.multiErr
	}
	res := make([]zk.MultiResponse, len(ops))
	for i, op := range ops {
		set, ok := op.(*zk.SetDataRequest)
		if !ok {
			return nil, fmt.Errorf("fake: unexpected op %T", op)
		}
		n, ok := f.nodes[set.Path]
		var err error
		switch {
		case !ok:
			err = zk.ErrNoNode
		case set.Version != -1 && set.Version != n.version:
			err = zk.ErrBadVersion
			f.stale++
		}
		if err != nil {
			for j := range res {
				res[j].Error = zk.ErrAPIError
			}
			res[i].Error = err
			return res, err
		}
	}
	for i, op := range ops {
		set := op.(*zk.SetDataRequest)
		n := f.nodes[set.Path]
		n.data = append([]byte(nil), set.Data...)
		n.version++
		f.writes[set.Path] = append(f.writes[set.Path], string(set.Data))
		res[i].Stat = &zk.Stat{Version: n.version}
	}
	return res, nil
}

func (f *fakeZK) Exists(path string) (bool, *zk.Stat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nodes[path]
	if !ok {
		return false, nil, nil
	}
	return true, &zk.Stat{Version: n.version}, nil
}

// put writes a node directly (creating parents), as another writer would.
func (f *fakeZK) put(path, data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 1; i < len(path); i++ {
		if path[i] == '/' {
			if _, ok := f.nodes[path[:i]]; !ok {
				f.nodes[path[:i]] = &fakeNode{}
			}
		}
	}
	if n, ok := f.nodes[path]; ok {
		n.data = []byte(data)
		n.version++
		return
	}
	f.nodes[path] = &fakeNode{data: []byte(data)}
}

func (f *fakeZK) data(path string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nodes[path]
	if !ok {
		return "", false
	}
	return string(n.data), true
}

func (f *fakeZK) writeLog(path string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.writes[path]...)
}

func newTestZKStore(t testing.TB, f *fakeZK) *ZooKeeperStore {
	t.Helper()
	s, err := NewZooKeeperStore(f, "g", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustFetch(t testing.TB, s Store, topic string, p int32) (int64, bool) {
	t.Helper()
	next, ok, err := s.Fetch(context.Background(), topic, p)
	if err != nil {
		t.Fatalf("fetch %s/%d: %v", topic, p, err)
	}
	return next, ok
}

func TestZooKeeperStoreCommitFetchReset(t *testing.T) {
	f := newFakeZK()
	s := newTestZKStore(t, f)
	ctx := context.Background()
	path := zkdata.OffsetPath("g", "orders", 3)

	if _, ok := mustFetch(t, s, "orders", 3); ok {
		t.Fatal("fetch of a missing node: ok=true")
	}
	if err := s.Commit(ctx, "orders", 3, 5); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/consumers", "/consumers/g", "/consumers/g/offsets", "/consumers/g/offsets/orders"} {
		if ok, _, _ := f.Exists(p); !ok {
			t.Errorf("parent %s not created", p)
		}
	}
	steps := []struct {
		op   string
		next int64
		want int64
	}{
		{"commit", 3, 5},   // backwards: ignored
		{"commit", 5, 5},   // equal: nothing to write
		{"commit", 9, 9},   // forward
		{"reset", 2, 2},    // reset goes backwards
		{"commit", 4, 4},   // and commits continue from there
		{"reset", 4, 4},    // reset to the same value
		{"commit", 0, 4},   // zero is below
		{"commit", 10, 10}, // forward again
	}
	for _, st := range steps {
		var err error
		if st.op == "commit" {
			err = s.Commit(ctx, "orders", 3, st.next)
		} else {
			err = s.Reset(ctx, "orders", 3, st.next)
		}
		if err != nil {
			t.Fatalf("%s %d: %v", st.op, st.next, err)
		}
		if got, ok := mustFetch(t, s, "orders", 3); !ok || got != st.want {
			t.Fatalf("after %s %d: fetch = %d, %v; want %d", st.op, st.next, got, ok, st.want)
		}
		if d, _ := f.data(path); d != strconv.FormatInt(st.want, 10) {
			t.Fatalf("after %s %d: node holds %q, want plain decimal %d", st.op, st.next, d, st.want)
		}
	}
	want := []string{"5", "9", "2", "4", "4", "10"}
	if got := f.writeLog(path); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("writes = %v, want %v (no write for ignored commits)", got, want)
	}
	// Other partitions and topics are separate nodes.
	if _, ok := mustFetch(t, s, "orders", 4); ok {
		t.Fatal("partition 4 has an offset")
	}
}

// TestZooKeeperStoreCASRace interleaves another writer between our read
// and our versioned write.
func TestZooKeeperStoreCASRace(t *testing.T) {
	path := zkdata.OffsetPath("g", "t", 0)
	tests := []struct {
		name      string
		initial   string // "" = no node
		other     string // what the other writer writes before our first Set/Create
		commit    int64
		want      string
		wantWrite []string
	}{
		{"other writes higher: skip", "5", "20", 10, "20", nil},
		{"other writes equal: skip", "5", "10", 10, "10", nil},
		{"other writes lower: retry and win", "5", "7", 10, "10", []string{"10"}},
		{"other creates higher: skip", "", "50", 10, "50", nil},
		{"other creates lower: retry and win", "", "3", 10, "10", []string{"10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeZK()
			if tt.initial != "" {
				f.put(path, tt.initial)
			}
			var once sync.Once
			interfere := func(p string) {
				if p == path {
					once.Do(func() { f.put(path, tt.other) })
				}
			}
			f.beforeSet, f.beforeCreate = interfere, interfere
			s := newTestZKStore(t, f)
			if err := s.Commit(context.Background(), "t", 0, tt.commit); err != nil {
				t.Fatal(err)
			}
			if got, _ := f.data(path); got != tt.want {
				t.Fatalf("node holds %q, want %q", got, tt.want)
			}
			if got := f.writeLog(path); strings.Join(got, ",") != strings.Join(tt.wantWrite, ",") {
				t.Fatalf("our writes = %v, want %v", got, tt.wantWrite)
			}
		})
	}
}

// TestZooKeeperStoreConcurrentNeverBackwards commits from many goroutines
// and checks that the sequence of values written only increases.
func TestZooKeeperStoreConcurrentNeverBackwards(t *testing.T) {
	f := newFakeZK()
	f.beforeSet = func(string) { runtime.Gosched() } // widen the read-write window
	s := newTestZKStore(t, f)
	const workers, per = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				// Interleaved, overlapping values: worker w commits w, w+8, ...
				// but in a scrambled order.
				v := int64((i*7%per)*workers + w)
				if err := s.Commit(context.Background(), "t", 1, v); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	path := zkdata.OffsetPath("g", "t", 1)
	writes := f.writeLog(path)
	prev := int64(-1)
	for i, w := range writes {
		v, err := strconv.ParseInt(w, 10, 64)
		if err != nil {
			t.Fatalf("write %d: %q", i, w)
		}
		if v <= prev {
			t.Fatalf("write %d moved the offset from %d to %d", i, prev, v)
		}
		prev = v
	}
	if want := int64(per*workers - 1); prev != want {
		t.Fatalf("final offset %d, want %d", prev, want)
	}
	f.mu.Lock()
	t.Logf("%d commits, %d writes, %d version conflicts", workers*per, len(writes), f.stale)
	f.mu.Unlock()
}

func TestZooKeeperStoreBadData(t *testing.T) {
	path := zkdata.OffsetPath("g", "t", 2)
	for _, bad := range []string{"", " ", "abc", "-1", "12a", "1.5", "+3", "99999999999999999999", `{"offset":1}`} {
		t.Run(strconv.Quote(bad), func(t *testing.T) {
			f := newFakeZK()
			f.put(path, bad)
			s := newTestZKStore(t, f)
			_, ok, err := s.Fetch(context.Background(), "t", 2)
			if err == nil || ok {
				t.Fatalf("fetch of %q: ok=%v err=%v, want an error", bad, ok, err)
			}
			checkBadDataErr(t, err, ErrFetchOffset, path, bad)
			err = s.Commit(context.Background(), "t", 2, 7)
			checkBadDataErr(t, err, ErrCommit, path, bad)
			if got, _ := f.data(path); got != bad {
				t.Fatalf("commit changed bad node to %q", got)
			}
			// Reset repairs it.
			if err := s.Reset(context.Background(), "t", 2, 7); err != nil {
				t.Fatal(err)
			}
			if got, ok := mustFetch(t, s, "t", 2); !ok || got != 7 {
				t.Fatalf("after reset: %d %v", got, ok)
			}
		})
	}
}

func checkBadDataErr(t *testing.T, err, sentinel error, path, content string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error for node content %q", content)
	}
	if !errors.Is(err, sentinel) || !errors.Is(err, zkdata.ErrMalformed) {
		t.Fatalf("error %v does not wrap %v and zkdata.ErrMalformed", err, sentinel)
	}
	var pe *PartitionError
	if !errors.As(err, &pe) || pe.Topic != "t" || pe.Partition != 2 {
		t.Fatalf("error %v is not a PartitionError for t/2", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) || !strings.Contains(msg, strconv.Quote(content)) {
		t.Fatalf("error %q does not name path %s and content %q", msg, path, content)
	}
}

func TestZooKeeperStoreErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := NewZooKeeperStore(nil, "g", nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("nil nodes: %v", err)
	}
	for _, g := range []string{"", "a/b", ".."} {
		if _, err := NewZooKeeperStore(newFakeZK(), g, nil); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "group") {
			t.Fatalf("group %q: %v", g, err)
		}
	}
	s := newTestZKStore(t, newFakeZK())
	for _, tc := range []struct {
		topic string
		p     int32
		next  int64
		what  string
	}{{"", 0, 0, "topic is empty"}, {"t", -1, 0, "partition -1"}, {"t", 0, -5, "offset -5"}, {"a/b", 0, 0, "topic"}} {
		err := s.Commit(ctx, tc.topic, tc.p, tc.next)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.what) {
			t.Errorf("commit(%q, %d, %d) = %v, want ErrConfig naming %q", tc.topic, tc.p, tc.next, err, tc.what)
		}
	}

	for _, tc := range []struct {
		name string
		set  func(f *fakeZK)
		op   string
	}{
		{"get", func(f *fakeZK) { f.getErr = zk.ErrConnectionClosed }, "fetch"},
		{"get", func(f *fakeZK) { f.getErr = zk.ErrConnectionClosed }, "commit"},
		{"set", func(f *fakeZK) { f.put(zkdata.OffsetPath("g", "t", 0), "1"); f.setErr = zk.ErrConnectionClosed }, "commit"},
		{"set", func(f *fakeZK) { f.put(zkdata.OffsetPath("g", "t", 0), "1"); f.setErr = zk.ErrConnectionClosed }, "reset"},
		{"create", func(f *fakeZK) { f.createErr = zk.ErrNoAuth }, "commit"},
	} {
		t.Run(tc.name+"-"+tc.op, func(t *testing.T) {
			f := newFakeZK()
			tc.set(f)
			s := newTestZKStore(t, f)
			var err error
			switch tc.op {
			case "fetch":
				_, _, err = s.Fetch(ctx, "t", 0)
			case "commit":
				err = s.Commit(ctx, "t", 0, 5)
			case "reset":
				err = s.Reset(ctx, "t", 0, 5)
			}
			if err == nil || !(errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoAuth)) {
				t.Fatalf("%s: %v, want the connection's error", tc.op, err)
			}
			if tc.op != "fetch" && (!errors.Is(err, ErrCommit) || !strings.Contains(err.Error(), "offset 5")) {
				t.Fatalf("%s: %v does not wrap ErrCommit naming offset 5", tc.op, err)
			}
		})
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Commit(cctx, "t", 0, 1); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCommit) {
		t.Fatalf("canceled commit: %v", err)
	}
	if err := s.Release(ctx, "t", 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Fetch(ctx, "t", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("fetch after close: %v", err)
	}
	if err := s.Commit(ctx, "t", 0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("commit after close: %v", err)
	}
	if err := s.Release(ctx, "t", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("release after close: %v", err)
	}
}

// FuzzZooKeeperStoreOps runs a sequence of commits and resets against the
// fake and checks the node against a model: commit keeps the maximum, reset
// sets.
func FuzzZooKeeperStoreOps(f *testing.F) {
	f.Add([]byte{0, 5, 0, 3, 1, 1, 0, 9})
	f.Add([]byte{1, 0, 1, 200, 0, 100})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, ops []byte) {
		fz := newFakeZK()
		s := newTestZKStore(t, fz)
		var model int64 = -1
		for i := 0; i+1 < len(ops); i += 2 {
			v := int64(ops[i+1])
			if ops[i]%2 == 0 {
				if err := s.Commit(context.Background(), "t", 0, v); err != nil {
					t.Fatal(err)
				}
				model = max(model, v)
			} else {
				if err := s.Reset(context.Background(), "t", 0, v); err != nil {
					t.Fatal(err)
				}
				model = v
			}
		}
		got, ok, err := s.Fetch(context.Background(), "t", 0)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (model >= 0) || ok && got != model {
			t.Fatalf("fetch = %d, %v; model %d", got, ok, model)
		}
	})
}

// FuzzZooKeeperStoreFetch feeds arbitrary node content to Fetch: it either
// returns the decimal the node holds or an error naming the path.
func FuzzZooKeeperStoreFetch(f *testing.F) {
	for _, s := range []string{"0", "42", " 7\n", "", "abc", "-1", "9223372036854775807", "9223372036854775808"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fz := newFakeZK()
		path := zkdata.OffsetPath("g", "t", 0)
		fz.put(path, string(data))
		s := newTestZKStore(t, fz)
		got, ok, err := s.Fetch(context.Background(), "t", 0)
		if err != nil {
			if !errors.Is(err, ErrFetchOffset) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v does not wrap ErrFetchOffset and name %s", err, path)
			}
			return
		}
		want, perr := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if !ok || perr != nil || got != want || got < 0 {
			t.Fatalf("fetch(%q) = %d, %v; ParseInt says %d, %v", data, got, ok, want, perr)
		}
	})
}

// TestZooKeeperStoreCommitBatch: partitions the store wrote before go in
// one multi transaction; the others, those below what is known, and those
// of a transaction that failed take the read-compare-write path; bad
// entries fail alone.
func TestZooKeeperStoreCommitBatch(t *testing.T) {
	f := newFakeZK()
	s := newTestZKStore(t, f)
	ctx := context.Background()
	batch := func(next ...int64) []Offset {
		b := make([]Offset, len(next))
		for p, n := range next {
			b[p] = Offset{TopicPartition: TopicPartition{"t", int32(p)}, Next: n}
		}
		return b
	}
	noErrs := func(errs []error) {
		t.Helper()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
		}
	}
	want := func(p int32, v string, writes ...string) {
		t.Helper()
		path := zkdata.OffsetPath("g", "t", p)
		if d, _ := f.data(path); d != v {
			t.Fatalf("partition %d holds %q, want %q", p, d, v)
		}
		if got := f.writeLog(path); strings.Join(got, ",") != strings.Join(writes, ",") {
			t.Fatalf("partition %d writes %v, want %v", p, got, writes)
		}
	}
	noErrs(s.CommitBatch(ctx, batch(5, 6, 7))) // unknown: created one by one
	if len(f.multis) != 0 {
		t.Fatalf("multis %v for partitions never written", f.multis)
	}
	noErrs(s.CommitBatch(ctx, batch(10, 11, 12)))
	if !slices.Equal(f.multis, []int{3}) {
		t.Fatalf("multis %v, want one of 3 operations", f.multis)
	}
	want(0, "10", "5", "10")
	// Partition 1 is below what is known (read decides: skipped); another
	// writer moved partition 2 on: the multi of 0 and 2 fails and both are
	// written one by one, 2 not backwards.
	f.put(zkdata.OffsetPath("g", "t", 2), "40")
	noErrs(s.CommitBatch(ctx, batch(20, 11, 30)))
	if !slices.Equal(f.multis, []int{3, 2}) {
		t.Fatalf("multis %v, want a second one of 2 operations", f.multis)
	}
	want(0, "20", "5", "10", "20")
	want(1, "11", "6", "11")
	want(2, "40", "7", "12")
	// Everything known again: one multi.
	noErrs(s.CommitBatch(ctx, batch(21, 12, 41)))
	if !slices.Equal(f.multis, []int{3, 2, 3}) {
		t.Fatalf("multis %v, want a third one of 3 operations", f.multis)
	}
	want(2, "41", "7", "12", "41")
	// A broken transaction falls back to single writes, which work.
	f.mu.Lock()
	f.multiErr = zk.ErrConnectionClosed
	f.mu.Unlock()
	noErrs(s.CommitBatch(ctx, batch(22, 13, 42)))
	want(1, "13", "6", "11", "12", "13")
	f.mu.Lock()
	f.multiErr = nil
	f.mu.Unlock()
	// Bad entries fail alone.
	bad := append(batch(23, 14), Offset{TopicPartition: TopicPartition{"", 0}, Next: 1}, Offset{TopicPartition: TopicPartition{"t", 0}, Next: 24}, Offset{TopicPartition: TopicPartition{"t", 5}, Next: -1})
	errs := s.CommitBatch(ctx, bad)
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("good entries failed: %v", errs[:2])
	}
	for _, i := range []int{2, 3, 4} {
		var pe *PartitionError
		if !errors.Is(errs[i], ErrConfig) || !errors.As(errs[i], &pe) || pe.Op != "commit" {
			t.Errorf("entry %d (%v): %v, want a commit PartitionError wrapping ErrConfig", i, bad[i], errs[i])
		}
	}
	want(0, "23", "5", "10", "20", "21", "22", "23")
	// Released partitions are forgotten: read first again.
	if err := s.Release(ctx, "t", 0); err != nil {
		t.Fatal(err)
	}
	n := len(f.multis)
	noErrs(s.CommitBatch(ctx, batch(25)))
	if len(f.multis) != n {
		t.Fatalf("a released partition went into a multi")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, err := range s.CommitBatch(ctx, batch(30, 30)) {
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("CommitBatch after Close: %v, want ErrClosed", err)
		}
	}
}

// TestZooKeeperStoreCommitBatchChunks: more partitions than one
// transaction may carry go in several.
func TestZooKeeperStoreCommitBatchChunks(t *testing.T) {
	f := newFakeZK()
	s := newTestZKStore(t, f)
	const n = maxMultiOps + maxMultiOps/2
	b := make([]Offset, n)
	for round := int64(1); round <= 2; round++ {
		for p := range b {
			b[p] = Offset{TopicPartition: TopicPartition{"t", int32(p)}, Next: round}
		}
		for i, err := range s.CommitBatch(context.Background(), b) {
			if err != nil {
				t.Fatalf("round %d entry %d: %v", round, i, err)
			}
		}
	}
	if !slices.Equal(f.multis, []int{maxMultiOps, maxMultiOps / 2}) {
		t.Fatalf("multis %v, want %d and %d operations", f.multis, maxMultiOps, maxMultiOps/2)
	}
	for p := range int32(n) {
		if d, _ := f.data(zkdata.OffsetPath("g", "t", p)); d != "2" {
			t.Fatalf("partition %d holds %q", p, d)
		}
	}
}

package manager

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// TestDeleteBatcher: deletes queued while a batch is under way go in the
// next one, in multi requests of batchMax nodes: three ZooKeeper
// transactions for 1,010 nodes, not 1,010. In a multi that fails (a node
// already gone, another version), each delete is sent on its own and
// gets the error Delete gives; the others' nodes go.
func TestDeleteBatcher(t *testing.T) {
	_, _, group, s, _ := claimFixture(t)
	dir := zkdata.OwnerTopicPath(group, "t")
	mk := func(name string) string {
		t.Helper()
		p := dir + "/" + name
		if _, err := s.Create(p, nil, 0, nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	czxid := func(p string) int64 {
		t.Helper()
		_, st, err := s.Get(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Czxid
	}
	// run queues the deletes (path -> version) behind a batch under way,
	// then sends them, and returns their errors.
	run := func(b *opBatcher, dels map[string]int32) map[string]error {
		t.Helper()
		b.mu.Lock()
		b.busy = true // a batch under way: the deletes queue
		b.mu.Unlock()
		out := map[string]error{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for p, v := range dels {
			wg.Go(func() {
				err := b.delete(s, p, v)
				mu.Lock()
				out[p] = err
				mu.Unlock()
			})
		}
		testcluster.Await(t, 30*time.Second, time.Millisecond, "the deletes queued", func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return len(b.queue) == len(dels)
		})
		b.send(s) // as the batch under way's sender does when it ends
		wg.Wait()
		if b.busy || len(b.queue) != 0 {
			t.Fatalf("after the batch: busy %v, %d queued", b.busy, len(b.queue))
		}
		return out
	}

	const n = 2*batchMax + 10
	dels := map[string]int32{}
	for i := range n {
		dels[mk(fmt.Sprintf("n%04d", i))] = 0
	}
	before := czxid(mk("before"))
	var b opBatcher
	for p, err := range run(&b, dels) {
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	// Three multis and the create of "after"; other clients of the
	// cluster's ZooKeeper (its brokers) may write meanwhile too.
	if d := czxid(mk("after")) - before; d < 4 || d > 20 {
		t.Errorf("%d nodes deleted in %d ZooKeeper transactions, want 3 (and one create)", n, d-1)
	}
	kids, _, err := s.Children(dir)
	if err != nil || len(kids) != 2 {
		t.Fatalf("left: %d nodes (%v), want before and after", len(kids), err)
	}

	gone, other, fine := mk("gone"), mk("other"), mk("fine")
	if err := s.Delete(gone, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(other, []byte("x"), 0); err != nil { // version 1
		t.Fatal(err)
	}
	got := run(&b, map[string]int32{gone: 0, other: 0, fine: 0})
	if !errors.Is(got[gone], zk.ErrNoNode) || !errors.Is(got[other], zk.ErrBadVersion) || got[fine] != nil {
		t.Fatalf("errors %v, want no node, bad version and none", got)
	}
	for p, want := range map[string]bool{fine: false, other: true} {
		if ok, _, err := s.Exists(p); err != nil || ok != want {
			t.Fatalf("%s exists: %v (%v), want %v", p, ok, err, want)
		}
	}
}

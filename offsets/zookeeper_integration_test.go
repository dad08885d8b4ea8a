package offsets

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// chrootNodes is a test-only ZNodes that prefixes every path with a chroot,
// as a connection opened with a chroot would.
type chrootNodes struct {
	conn *zk.Conn
	root string
}

func (c chrootNodes) Get(path string) ([]byte, *zk.Stat, error) { return c.conn.Get(c.root + path) }
func (c chrootNodes) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	return c.conn.Set(c.root+path, data, version)
}
func (c chrootNodes) Exists(path string) (bool, *zk.Stat, error) { return c.conn.Exists(c.root + path) }
func (c chrootNodes) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	p, err := c.conn.Create(c.root+path, data, flags, acl)
	return strings.TrimPrefix(p, c.root), err
}

func (c chrootNodes) Multi(ops ...any) ([]zk.MultiResponse, error) {
	rooted := make([]any, len(ops))
	for i, op := range ops {
		rooted[i] = op
		if set, ok := op.(*zk.SetDataRequest); ok {
			cp := *set
			cp.Path = c.root + cp.Path
			rooted[i] = &cp
		}
	}
	return c.conn.Multi(rooted...)
}

// clusterZK connects to the shared cluster's ZooKeeper and creates a chroot
// /t-<name> for the test. The connection is closed when the test ends.
func clusterZK(t *testing.T, c *testcluster.Cluster) (*zk.Conn, chrootNodes) {
	t.Helper()
	conn := testcluster.ZooKeeper(t, c)
	root := "/t-" + testcluster.Name(t, "zk")
	if _, err := conn.Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create chroot %s: %v", root, err)
	}
	return conn, chrootNodes{conn: conn, root: root}
}

// mustZKStore returns the ZooKeeperStore of group on nodes.
func mustZKStore(t *testing.T, nodes chrootNodes, group string) *ZooKeeperStore {
	t.Helper()
	s, err := NewZooKeeperStore(nodes, group, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestZooKeeperStoreCluster runs the store against the real ZooKeeper,
// under a chroot, with two connections committing at once.
func TestZooKeeperStoreCluster(t *testing.T) {
	c := testcluster.Shared(t)
	verifyNoLeaks(t)
	conn, nodes := clusterZK(t, c)
	group := testcluster.Name(t, "group")
	s := mustZKStore(t, nodes, group)
	ctx := context.Background()
	wantOffset(t, s, "orders", 0, -1)
	if err := s.Commit(ctx, "orders", 0, 42); err != nil {
		t.Fatal(err)
	}
	wantOffset(t, s, "orders", 0, 42)
	raw := nodes.root + zkdata.OffsetPath(group, "orders", 0)
	data, stat, err := conn.Get(raw)
	if err != nil || string(data) != "42" {
		t.Fatalf("raw node %s = %q, %v; want plain decimal 42 under the chroot", raw, data, err)
	}
	if stat.EphemeralOwner != 0 {
		t.Fatal("offset node is ephemeral")
	}
	if err := s.Commit(ctx, "orders", 0, 41); err != nil {
		t.Fatal(err)
	}
	wantOffset(t, s, "orders", 0, 42)
	if err := s.Reset(ctx, "orders", 0, 7); err != nil {
		t.Fatal(err)
	}
	wantOffset(t, s, "orders", 0, 7)

	// Two sessions commit interleaved values; a watcher checks that the
	// node never goes backwards while they do.
	conn2 := testcluster.ZooKeeper(t, c)
	s2 := mustZKStore(t, chrootNodes{conn: conn2, root: nodes.root}, group)
	const workers, per = 4, 25
	var wg sync.WaitGroup
	var stop atomic.Bool
	watchErr := make(chan error, 1)
	go func() {
		prev := int64(-1)
		for !stop.Load() {
			v, ok, err := s.Fetch(ctx, "orders", 1)
			if err != nil {
				watchErr <- err
				return
			}
			if ok && v < prev {
				watchErr <- errors.New("offset went from " + strconv.FormatInt(prev, 10) + " to " + strconv.FormatInt(v, 10))
				return
			}
			if ok {
				prev = v
			}
		}
		watchErr <- nil
	}()
	for w := 0; w < workers; w++ {
		for _, st := range []*ZooKeeperStore{s, s2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					if err := st.Commit(ctx, "orders", 1, int64((i*7%per)*workers+w)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	stop.Store(true)
	if err := <-watchErr; err != nil {
		t.Fatal(err)
	}
	wantOffset(t, s2, "orders", 1, per*workers-1)

	// Bad data written by someone else is reported with path and content.
	path := zkdata.OffsetPath(group, "orders", 2)
	if err := s.Commit(ctx, "orders", 2, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(nodes.root+path, []byte("oops"), -1); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Fetch(ctx, "orders", 2)
	if !errors.Is(err, ErrFetchOffset) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"oops"`) {
		t.Fatalf("fetch of bad data: %v", err)
	}
	if err := s.Commit(ctx, "orders", 2, 5); !errors.Is(err, ErrCommit) || !strings.Contains(err.Error(), `"oops"`) {
		t.Fatalf("commit over bad data: %v", err)
	}
	if err := s.Reset(ctx, "orders", 2, 5); err != nil {
		t.Fatal(err)
	}
	wantOffset(t, s, "orders", 2, 5)
}

// TestZooKeeperStoreClusterBatch: batches against the real ZooKeeper, with
// another session writing one of the partitions between them: the
// transaction that meets its write fails whole and falls back, and no
// offset goes backwards.
func TestZooKeeperStoreClusterBatch(t *testing.T) {
	c := testcluster.Shared(t)
	verifyNoLeaks(t)
	_, nodes := clusterZK(t, c)
	group := testcluster.Name(t, "group")
	s := mustZKStore(t, nodes, group)
	conn2 := testcluster.ZooKeeper(t, c)
	other := mustZKStore(t, chrootNodes{conn: conn2, root: nodes.root}, group)
	ctx := context.Background()
	const n = 10
	batch := func(base int64) []Offset {
		b := make([]Offset, n)
		for p := range int32(n) {
			b[p] = Offset{TopicPartition: TopicPartition{"orders", p}, Next: base + int64(p)}
		}
		return b
	}
	for _, base := range []int64{10, 20} { // created, then one transaction
		for i, err := range s.CommitBatch(ctx, batch(base)) {
			if err != nil {
				t.Fatalf("base %d entry %d: %v", base, i, err)
			}
		}
	}
	if err := other.Commit(ctx, "orders", 3, 100); err != nil {
		t.Fatal(err)
	}
	for i, err := range s.CommitBatch(ctx, batch(30)) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	for p := range int32(n) {
		want := 30 + int64(p)
		if p == 3 {
			want = 100
		}
		wantOffset(t, other, "orders", p, want)
	}
	for i, err := range s.CommitBatch(ctx, batch(40)) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	wantOffset(t, other, "orders", 3, 100)
	wantOffset(t, other, "orders", 9, 49)
}

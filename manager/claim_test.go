package manager

import (
	"log/slog"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"go.uber.org/goleak"
)

// TestClaimNoticesLoss: a claim watches its owner node without a goroutine
// of its own (session hooks) and still notices every way of losing it: the
// node deleted, the node taken over, a rewrite that keeps it ours (not a
// loss; the watch is set again), the session closed. AfterLost functions
// run on loss; release and abandon leave no goroutine behind.
func TestClaimNoticesLoss(t *testing.T) {
	c := testcluster.Shared(t)
	zc := testcluster.ZooKeeper(t, c)
	ignore := goleak.IgnoreCurrent()
	group := testcluster.Name(t, "g")
	claimOf := func(t *testing.T, s *zkconn.Session, p int32) (*claim, string) {
		t.Helper()
		return claimOn(t, s, group, p), c.Chroot() + zkdata.OwnerPath(group, "t", p)
	}
	lostWithin := func(t *testing.T, cl *claim, what string) {
		t.Helper()
		ran := make(chan struct{})
		cl.AfterLost(func() { close(ran) })
		for _, ch := range []<-chan struct{}{cl.Lost(), ran} {
			select {
			case <-ch:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the claim was not lost (or AfterLost did not run)", what)
			}
		}
	}
	s := dialSession(t, c)

	for i, tc := range []struct {
		name   string
		change func(node string) error
	}{
		{"deleted", func(node string) error { return zc.Delete(node, -1) }},
		{"taken over", func(node string) error {
			_, err := zc.Set(node, zkdata.FormatOwner("someone-else"), -1)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, p := claimOf(t, s, int32(i))
			if err := tc.change(p); err != nil {
				t.Fatal(err)
			}
			lostWithin(t, cl, "node "+tc.name)
			cl.abandon()
		})
	}
	t.Run("rewritten, still ours", func(t *testing.T) {
		cl, p := claimOf(t, s, 2)
		if _, err := zc.Set(p, zkdata.FormatOwner("me"), -1); err != nil {
			t.Fatal(err)
		}
		// The check after the change reads the node, setting the watch again.
		testcluster.Poll(10*time.Second, time.Millisecond, func() bool { return cl.rechecked.Load() == 1 })
		if n := cl.rechecked.Load(); n != 1 {
			t.Fatalf("checks after the rewrite: %d, want 1", n)
		}
		select {
		case <-cl.Lost():
			t.Fatal("a rewrite that keeps the node ours lost the claim")
		default:
		}
		if err := zc.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
		lostWithin(t, cl, "node deleted after a rewrite")
		cl.abandon()
	})
	t.Run("released", func(t *testing.T) {
		cl, p := claimOf(t, s, 3)
		if err := cl.release(); err != nil {
			t.Fatal(err)
		}
		if ok, _, _ := zc.Exists(p); ok {
			t.Error("the owner node is still there after release")
		}
		lostWithin(t, cl, "released")
	})
	t.Run("session closed", func(t *testing.T) {
		s2 := dialSession(t, c)
		cl, _ := claimOf(t, s2, 4)
		s2.Close()
		lostWithin(t, cl, "session closed")
		cl.abandon()
	})
	s.Close()
	zc.Close()
	goleak.VerifyNone(t, ignore, goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"))
}

// dialSession opens a zkconn session on c's ZooKeeper, under its chroot.
// The caller closes it.
func dialSession(tb testing.TB, c *testcluster.Cluster) *zkconn.Session {
	tb.Helper()
	return dialServer(tb, c.ZooKeeperAddr(), c.Chroot())
}

// dialServer opens a zkconn session on the ZooKeeper at server (c's, or a
// proxy to it), under chroot. The caller closes it.
func dialServer(tb testing.TB, server, chroot string) *zkconn.Session {
	tb.Helper()
	s, err := zkconn.Dial(zkconn.Config{Servers: []string{server}, Chroot: chroot, SessionTimeout: 10 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// claimOn claims partition p of topic "t" for group as "me", with a healthy
// gate, or fails tb.
func claimOn(tb testing.TB, s *zkconn.Session, group string, p int32) *claim {
	tb.Helper()
	health := newGate()
	health.set(true)
	var waits atomic.Int64
	cl, err := acquire(s, group, TopicPartition{Topic: "t", Partition: p}, "me", health, slog.New(slog.DiscardHandler), nil, &waits, nil, nil, nil, claimRead)
	if err != nil {
		tb.Fatal(err)
	}
	return cl
}

// claimFixture returns the shared cluster, a ZooKeeper connection to it,
// a fresh group whose owners node of topic "t" exists, a session (closed
// at the end of the test) and a healthy gate.
func claimFixture(t *testing.T) (*testcluster.Cluster, *zk.Conn, string, *zkconn.Session, *gate) {
	t.Helper()
	c := testcluster.Shared(t)
	zc := testcluster.ZooKeeper(t, c)
	group := testcluster.Name(t, "g")
	s := dialSession(t, c)
	t.Cleanup(s.Close)
	if err := s.CreateParents(zkdata.OwnerTopicPath(group, "t")); err != nil {
		t.Fatal(err)
	}
	health := newGate()
	health.set(true)
	return c, zc, group, s, health
}

// TestClaimCanceledAfterCreate: a claim canceled (its partition revoked)
// just after its create made the owner node does not leave the node
// behind: it is read back and returned, and the caller releases it (the
// old code returned "canceled" and the node stayed, held by the session
// for its whole life, so the partition's next owner waited for ever). A
// claim canceled while it waits for another owner returns at once and
// creates nothing.
func TestClaimCanceledAfterCreate(t *testing.T) {
	c, zc, group, s, health := claimFixture(t)
	var waits atomic.Int64
	log := slog.New(slog.DiscardHandler)
	full := c.Chroot() + zkdata.OwnerPath(group, "t", 0)

	cancel := make(chan struct{})
	var once sync.Once
	hook := func(p string) {
		if p == zkdata.OwnerPath(group, "t", 0) { // this test's claim only
			once.Do(func() { close(cancel) })
		}
	}
	afterCreate.Store(&hook)
	defer afterCreate.Store(nil)
	cl, err := acquire(s, group, TopicPartition{Topic: "t", Partition: 0}, "me", health, log, cancel, &waits, nil, nil, nil, claimRead)
	afterCreate.Store(nil)
	if err == nil {
		if err := cl.release(); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _, xerr := zc.Exists(full); xerr != nil || ok {
		t.Fatalf("owner node after a claim canceled right after its create (acquire: %v): exists %v, %v; want it gone", err, ok, xerr)
	}

	// Held by another: a cancel during the wait returns, nothing created.
	if _, err := zc.Create(full, zkdata.FormatOwner("other"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	cancel = make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := acquire(s, group, TopicPartition{Topic: "t", Partition: 0}, "me", health, log, cancel, &waits, nil, nil, nil, claimRead)
		done <- err
	}()
	testcluster.Poll(10*time.Second, time.Millisecond, func() bool { return waits.Load() == 1 })
	close(cancel)
	if err := recvWithin(t, done, "return of a canceled wait"); err != errClaimCanceled {
		t.Fatalf("canceled wait: %v; want errClaimCanceled", err)
	}
	data, _, err := zc.Get(full)
	if err != nil || zkdata.ParseOwner(data) != "other" {
		t.Fatalf("owner node after the canceled wait: %q, %v; want the other's", data, err)
	}
}

// TestClaimCreatesFirstWhenSeenUnowned: a claim whose plan saw the
// partition unowned creates the owner node at once and reads it back (a
// create and a read, where reading first takes a read more); one that
// finds the node held after all (the plan's view was old) waits for the
// holder as a claim that read first does, and takes the node once it is
// gone.
func TestClaimCreatesFirstWhenSeenUnowned(t *testing.T) {
	c, zc, group, s, health := claimFixture(t)
	log := slog.New(slog.DiscardHandler)
	var mu sync.Mutex
	var ops []string
	record := func(op string) func(string) {
		return func(p string) {
			if path.Dir(p) == zkdata.OwnerTopicPath(group, "t") { // this test's claims only
				mu.Lock()
				ops = append(ops, op)
				mu.Unlock()
			}
		}
	}
	created, read := record("create"), record("read")
	afterCreate.Store(&created)
	beforeRead.Store(&read)
	defer afterCreate.Store(nil)
	defer beforeRead.Store(nil)
	taken := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := ops
		ops = nil
		return out
	}
	claim := func(p int32, createFirst bool, cancel chan struct{}, waits *atomic.Int64) (*claim, error) {
		start := claimRead
		if createFirst {
			start = claimCreate
		}
		return acquire(s, group, TopicPartition{Topic: "t", Partition: p}, "me", health, log, cancel, waits, nil, nil, nil, start)
	}
	for _, tc := range []struct {
		createFirst bool
		want        string
	}{{true, "create read"}, {false, "read create read"}} {
		var waits atomic.Int64
		p := int32(0)
		if !tc.createFirst {
			p = 1
		}
		cl, err := claim(p, tc.createFirst, nil, &waits)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(taken(), " "); got != tc.want {
			t.Errorf("createFirst %v: %q, want %q", tc.createFirst, got, tc.want)
		}
		if err := cl.release(); err != nil {
			t.Fatal(err)
		}
	}

	// Held after all: the create fails, the claim waits, then takes it.
	full := c.Chroot() + zkdata.OwnerPath(group, "t", 2)
	if _, err := zc.Create(full, zkdata.FormatOwner("other"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var waits atomic.Int64
	done := make(chan error, 1)
	go func() {
		cl, err := claim(2, true, make(chan struct{}), &waits)
		if err == nil {
			err = cl.release()
		}
		done <- err
	}()
	testcluster.Poll(10*time.Second, time.Millisecond, func() bool { return waits.Load() == 1 })
	if err := zc.Delete(full, -1); err != nil {
		t.Fatal(err)
	}
	if err := recvWithin(t, done, "claim once the holder went"); err != nil {
		t.Fatalf("claim after the holder went: %v", err)
	}
	if got, want := strings.Join(taken(), " "), "create read create read"; got != want {
		t.Errorf("held after all: %q, want %q", got, want)
	}
}

// TestReleaseRetried: a release whose delete is cut off (the connection
// dropped while the request was in flight) is tried again once the
// session is back, so the node does not stay for the session's life.
func TestReleaseRetried(t *testing.T) {
	c := testcluster.Shared(t)
	zc := testcluster.ZooKeeper(t, c)
	group := testcluster.Name(t, "g")
	front := testcluster.ZooKeeperProxy(t, c)
	s := dialServer(t, front.Addr(), c.Chroot())
	defer s.Close()
	cl := claimOn(t, s, group, 0)
	full := c.Chroot() + zkdata.OwnerPath(group, "t", 0)
	front.Stall() // the release's read is written, and held
	done := make(chan error, 1)
	go func() { done <- cl.release() }()
	time.Sleep(200 * time.Millisecond) // not a synchronisation: the read is held until the cut either way
	front.Cut()                        // it fails with the connection
	front.Resume()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("release: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("release did not return")
	}
	if ok, _, err := zc.Exists(full); err != nil || ok {
		t.Fatalf("owner node after the release: exists %v, %v; want it deleted", ok, err)
	}
	if st := s.Status(); st.Epoch != 1 {
		t.Fatalf("the session was replaced (%+v): the node went with it, which proves nothing", st)
	}
}

// TestClaimCreatesBatched: the creates of claims made at about the same
// time go in multi requests of batchMax nodes (the claims of one multi
// share its zxid as their fencing token), and each claim then reads its
// node back; a claim canceled while its create was queued still reads
// its node back, and lets it go. In a multi with a partition held by
// another, each create is sent on its own: the others are made, the held
// one waits for its holder, then creates its node without reading first.
func TestClaimCreatesBatched(t *testing.T) {
	c, zc, group, s, health := claimFixture(t)
	log := slog.New(slog.DiscardHandler)
	full := func(p int32) string { return c.Chroot() + zkdata.OwnerPath(group, "t", p) }
	var b opBatcher
	var rb readBatcher
	type result struct {
		p     int32
		cl    *claim
		err   error
		waits *atomic.Int64
	}
	// claimAll queues the claims' creates behind a batch under way, then
	// sends them, and returns the claims once each has returned.
	claimAll := func(ps []int32, cancel map[int32]chan struct{}, release func(waits map[int32]*atomic.Int64)) map[int32]result {
		t.Helper()
		b.mu.Lock()
		b.busy = true
		b.mu.Unlock()
		out := make(chan result, len(ps))
		waits := map[int32]*atomic.Int64{}
		for _, p := range ps {
			waits[p] = new(atomic.Int64)
		}
		for _, p := range ps {
			go func() {
				w := waits[p]
				cl, err := acquire(s, group, TopicPartition{Topic: "t", Partition: p}, "me", health, log, cancel[p], w, nil, &b, &rb, claimCreate)
				out <- result{p, cl, err, w}
			}()
		}
		testcluster.Await(t, 30*time.Second, time.Millisecond, "the creates queued", func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return len(b.queue) == len(ps)
		})
		for _, ch := range cancel {
			close(ch)
		}
		b.send(s)
		if release != nil {
			release(waits)
		}
		got := map[int32]result{}
		for range ps {
			r := <-out
			got[r.p] = r
		}
		return got
	}

	var ps []int32
	for p := range int32(batchMax + 1) {
		ps = append(ps, p)
	}
	zxids := map[int64]int{}
	for p, r := range claimAll(ps, nil, nil) {
		if r.err != nil || r.cl == nil {
			t.Fatalf("partition %d: %v", p, r.err)
		}
		zxids[r.cl.token]++
		defer func() { _ = r.cl.release() }()
	}
	if len(zxids) != 2 {
		t.Fatalf("%d claims made in %d transactions (%v), want 2", len(ps), len(zxids), zxids)
	}

	// Canceled while queued: read back, returned, let go.
	const canceled = 1000
	r := claimAll([]int32{canceled}, map[int32]chan struct{}{canceled: make(chan struct{})}, nil)[canceled]
	if r.err != nil || r.cl == nil {
		t.Fatalf("canceled claim of a created node: %v, %v; want the claim, to let go", r.cl, r.err)
	}
	if err := r.cl.release(); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := zc.Exists(full(canceled)); ok {
		t.Fatal("the canceled claim's node is still there")
	}

	// 2001 is held: the multi fails, 2000 and 2002 are made on their own,
	// 2001 waits, and is made once its holder lets go.
	const held = 2001
	if _, err := zc.Create(full(held), zkdata.FormatOwner("other"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var creates atomic.Int64
	counted := func(p string) {
		if p == zkdata.OwnerPath(group, "t", held) {
			creates.Add(1)
		}
	}
	afterCreate.Store(&counted)
	defer afterCreate.Store(nil)
	got := claimAll([]int32{2000, held, 2002}, nil, func(waits map[int32]*atomic.Int64) {
		testcluster.Await(t, 30*time.Second, time.Millisecond, "the held partition's claim waiting", func() bool {
			return waits[held].Load() == 1
		})
		for _, p := range []int32{2000, 2002} {
			if ok, _, err := zc.Exists(full(p)); err != nil || !ok {
				t.Errorf("partition %d's node after the failed multi: exists %v, %v", p, ok, err)
			}
		}
		if err := zc.Delete(full(held), -1); err != nil {
			t.Fatal(err)
		}
	})
	for p, r := range got {
		if r.err != nil || r.cl == nil {
			t.Fatalf("partition %d: %v", p, r.err)
		}
		_ = r.cl.release()
	}
	if w := got[held].waits.Load(); w != 1 {
		t.Errorf("the held partition's claim waited %d times, want 1", w)
	}
	if n := creates.Load(); n != 2 {
		t.Errorf("the held partition's claim sent %d creates, want 2 (one failed, one once its holder went)", n)
	}
}

// TestClaimReadsBatched: claims made at once read their nodes in batched
// watched reads (readBatcher): each holds its node's czxid as its token
// and a watch of the session's own, and is lost when another session
// deletes its node or takes it over (delete and create: the watch fires
// on the delete); the others stay. Released together, their reads and
// deletes batched, they delete their own nodes and not another's. A
// claim of a node held by another waits on such a watch and claims once
// the holder's node goes. Released, a claim drops its watch.
func TestClaimReadsBatched(t *testing.T) {
	c, zc, group, s, health := claimFixture(t)
	log := slog.New(slog.DiscardHandler)
	var b opBatcher
	var rb readBatcher
	const n = 300
	claims := make([]*claim, n)
	errs := make(chan error, n)
	for p := range int32(n) {
		go func() {
			cl, err := acquire(s, group, TopicPartition{Topic: "t", Partition: p}, "me", health, log, nil, new(atomic.Int64), nil, &b, &rb, claimCreate)
			claims[p] = cl
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	full := func(p int32) string { return c.Chroot() + zkdata.OwnerPath(group, "t", p) }
	for p, cl := range claims {
		if !cl.raw {
			t.Fatalf("partition %d: read back on its own, not in a batch", p)
		}
		_, st, err := zc.Get(full(int32(p)))
		if err != nil {
			t.Fatal(err)
		}
		if cl.token != st.Czxid {
			t.Fatalf("partition %d: token %d, node's czxid %d", p, cl.token, st.Czxid)
		}
	}
	lost := func(p int) bool {
		select {
		case <-claims[p].Lost():
			return true
		default:
			return false
		}
	}
	if err := zc.Delete(full(7), -1); err != nil {
		t.Fatal(err)
	}
	testcluster.Await(t, 20*time.Second, 5*time.Millisecond, "partition 7's claim lost", func() bool { return lost(7) })
	// Taken over: deleted and created again by another session.
	if _, err := zc.Multi(&zk.DeleteRequest{Path: full(8), Version: -1},
		&zk.CreateRequest{Path: full(8), Data: zkdata.FormatOwner("other"), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	testcluster.Await(t, 20*time.Second, 5*time.Millisecond, "partition 8's claim lost", func() bool { return lost(8) })
	// The session's own read orders after the events of what came before.
	if _, _, err := s.Get(zkdata.OwnerPath(group, "t", 9)); err != nil {
		t.Fatal(err)
	}
	for p := range n {
		if p != 7 && p != 8 && lost(p) {
			t.Fatalf("partition %d's claim lost; only 7 and 8 were touched", p)
		}
	}
	// Released at once, their reads batched too (plain) and their deletes
	// in multis; 8's node is another's now: it stays.
	prb := readBatcher{plain: true}
	rerrs := make(chan error, n)
	for _, cl := range claims {
		go func() { rerrs <- cl.releaseVia(&b, &prb) }()
	}
	for range n {
		if err := <-rerrs; err != nil {
			t.Fatal(err)
		}
	}
	for p := range int32(n) {
		ok, _, err := zc.Exists(full(p))
		if err != nil {
			t.Fatal(err)
		}
		if ok != (p == 8) {
			t.Fatalf("partition %d's node there: %v after the releases; want only 8's (another's)", p, ok)
		}
	}

	// Held by another: the claim waits on its batched read's watch.
	held := int32(n)
	if _, err := zc.Create(full(held), zkdata.FormatOwner("other"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	waits := new(atomic.Int64)
	got := make(chan *claim, 1)
	go func() {
		cl, err := acquire(s, group, TopicPartition{Topic: "t", Partition: held}, "me", health, log, nil, waits, nil, &b, &rb, claimRead)
		if err != nil {
			t.Error(err)
		}
		got <- cl
	}()
	testcluster.Await(t, 20*time.Second, 5*time.Millisecond, "the claim waiting", func() bool { return waits.Load() == 1 })
	if err := zc.Delete(full(held), -1); err != nil {
		t.Fatal(err)
	}
	var cl *claim
	select {
	case cl = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("no claim after the holder's node went")
	}
	if cl == nil || !cl.raw {
		t.Fatalf("claim %+v; want one read in a batch", cl)
	}
	if _, st, err := zc.Get(full(held)); err != nil || st.Czxid != cl.token {
		t.Fatalf("the claimed node: %+v, %v; token %d", st, err, cl.token)
	}
	if err := cl.release(); err != nil {
		t.Fatal(err)
	}
	if w := s.OwnWatches(); w != 0 {
		t.Fatalf("%d watches kept after every claim ended; want none", w)
	}
}

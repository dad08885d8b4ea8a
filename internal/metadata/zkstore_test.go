package metadata_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// TestOpenSessionWatches runs a Watcher over a session the test holds (as
// a member does over its coordination session), reached through a proxy,
// with the safety resync an hour away: every change below can reach the
// view only through a watch. A topic created, partitions added, a new
// preferred leader and a topic deleted are each seen; the connection cut
// (the client reconnects within the session and sets its watches again)
// and the session expired (every watch dropped: everything read and armed
// again on the new session), each with a change made meanwhile, are seen
// too, and so is a change after each. Closing the Watcher stops its
// goroutines and leaves the session open and usable.
func TestOpenSessionWatches(t *testing.T) {
	c := testcluster.Shared(t)
	conn := testcluster.ZooKeeper(t, c)
	f := fakeLayout{t: t, conn: conn, chroot: "/" + testcluster.Name(t, "fake")}
	f.put("/brokers/topics/a", `{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}`)
	f.put("/brokers/topics/b", `{"version":1,"partitions":{"0":[3]}}`)

	p := testcluster.ZooKeeperProxy(t, c)
	const timeout = 4 * time.Second
	s, err := zkconn.Dial(zkconn.Config{Servers: []string{p.Addr()}, Chroot: f.chroot, SessionTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	answered(t, s)
	leaks := goleak.IgnoreCurrent()

	cfg := testConfig()
	cfg.Resync = time.Hour // only watches can deliver a change
	w, err := metadata.OpenSession(s, nil, cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = w.Close()
		}
	}()
	snap := w.Snapshot()
	if len(snap.Topics["a"]) != 2 || len(snap.Topics["b"]) != 1 || snap.Topics["a"][1].Leader != 2 {
		t.Fatalf("initial view %v", snap.Topics)
	}
	parts := func(topic string, n int) func(metadata.Snapshot) bool {
		return func(s metadata.Snapshot) bool { return len(s.Topics[topic]) == n }
	}
	gone := func(topic string) func(metadata.Snapshot) bool {
		return func(s metadata.Snapshot) bool { _, ok := s.Topics[topic]; return !ok }
	}

	// Watches on the topic list and on each topic node.
	f.put("/brokers/topics/c", `{"version":1,"partitions":{"0":[1]}}`)
	await(t, w, "topic c created", parts("c", 1))
	f.put("/brokers/topics/a", `{"version":1,"partitions":{"0":[1,2],"1":[2,1],"2":[3,1]}}`)
	await(t, w, "a partition added to a", parts("a", 3))
	f.put("/brokers/topics/a", `{"version":1,"partitions":{"0":[2,1],"1":[2,1],"2":[3,1]}}`)
	await(t, w, "a new preferred leader of a/0", func(s metadata.Snapshot) bool { return len(s.Topics["a"]) == 3 && s.Topics["a"][0].Leader == 2 })
	f.del("/brokers/topics/b")
	await(t, w, "topic b deleted", gone("b"))
	// Watches re-armed by the reads that followed: the same nodes again.
	f.put("/brokers/topics/b", `{"version":1,"partitions":{"0":[3],"1":[1]}}`)
	await(t, w, "topic b created again", parts("b", 2))
	f.put("/brokers/topics/c", `{"version":1,"partitions":{"0":[1],"1":[2]}}`)
	await(t, w, "a partition added to c", parts("c", 2))

	// The connection cut: a change while it is down is seen once the
	// client is back with its watches.
	epoch := s.Status().Epoch
	p.Block()
	f.put("/brokers/topics/c", `{"version":1,"partitions":{"0":[1],"1":[2],"2":[3]}}`)
	f.put("/brokers/topics/d", `{"version":1,"partitions":{"0":[1]}}`)
	p.Unblock()
	await(t, w, "changes made while disconnected", func(s metadata.Snapshot) bool { return parts("c", 3)(s) && parts("d", 1)(s) })
	if st := s.Status(); st.Epoch != epoch {
		t.Fatalf("the session was replaced by a short cut: epoch %d, was %d", st.Epoch, epoch)
	}
	f.put("/brokers/topics/d", `{"version":1,"partitions":{"0":[1],"1":[2]}}`)
	await(t, w, "a change after the reconnect", parts("d", 2))

	// The session expired: the server drops its watches; the client's
	// EventNotWatching makes the watcher read everything again.
	if _, err := s.Create("/probe", nil, zk.FlagEphemeral, nil); err != nil {
		t.Fatal(err)
	}
	_, epochDone := s.Epoch()
	p.Stall()
	f.put("/brokers/topics/a", `{"version":1,"partitions":{"0":[2,1]}}`) // shrunk: only a read shows it
	f.del("/brokers/topics/d")
	// Hold the stall until the server has expired the session, which
	// deletes its ephemeral probe.
	testcluster.Await(t, 30*time.Second, 50*time.Millisecond, "the server to expire the session", func() bool {
		ok, _, err := conn.Exists(f.chroot + "/probe")
		return err == nil && !ok
	})
	p.Resume()
	select {
	case <-epochDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not expire")
	}
	await(t, w, "changes made while the session expired", func(s metadata.Snapshot) bool { return parts("a", 1)(s) && gone("d")(s) })
	f.put("/brokers/topics/e", `{"version":1,"partitions":{"0":[1]}}`)
	f.put("/brokers/topics/c", `{"version":1,"partitions":{"0":[1]}}`)
	await(t, w, "changes on the new session", func(s metadata.Snapshot) bool { return parts("e", 1)(s) && parts("c", 1)(s) })
	if err := w.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}

	closed = true
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The session's own connection, dialled again since the baseline
	// (through the proxy), stays: it is not the Watcher's.
	goleak.VerifyNone(t, leaks,
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).recvLoop"),
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).sendLoop"),
		goleak.IgnoreAnyFunction("github.com/zkgroup/zkgroup/internal/faultproxy.(*pair).forward"))
	if _, _, err := s.Get("/brokers/topics/a"); err != nil {
		t.Errorf("the session after the Watcher closed: %v", err)
	}
	// A change after Close reaches nobody and breaks nothing.
	f.put("/brokers/topics/a", `{"version":1,"partitions":{"0":[2,1],"1":[1]}}`)
	f.put("/brokers/topics/f", `{"version":1,"partitions":{"0":[1]}}`)
	if _, _, err := s.Children("/brokers/topics"); err != nil {
		t.Errorf("the session after changes to nodes the closed Watcher watched: %v", err)
	}
	if err := w.Err(); !errors.Is(err, metadata.ErrClosed) {
		t.Errorf("after Close: Err() = %v, want ErrClosed", err)
	}
}

// del deletes a node and its children.
func (f fakeLayout) del(path string) {
	f.t.Helper()
	full := f.chroot + path
	kids, _, err := f.conn.Children(full)
	if err != nil {
		f.t.Fatalf("children of %s: %v", full, err)
	}
	for _, k := range kids {
		f.del(path + "/" + k)
	}
	if err := f.conn.Delete(full, -1); err != nil && err != zk.ErrNoNode {
		f.t.Fatalf("delete %s: %v", full, err)
	}
}

// TestReadTopicsBatched: the batched read of topic nodes (a resync's, in
// one multiRead) returns what reading each node on its own returns: the
// partitions of a topic, a malformed node as malformed, a missing one as
// missing.
func TestReadTopicsBatched(t *testing.T) {
	c := testcluster.Shared(t)
	conn := testcluster.ZooKeeper(t, c)
	f := fakeLayout{t: t, conn: conn, chroot: "/" + testcluster.Name(t, "fake")}
	f.put("/brokers/topics/a", `{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}`)
	f.put("/brokers/topics/b", `{"version":1,"partitions":{"0":[3]}}`)
	f.put("/brokers/topics/m", `{"version":1,"partitions":{"0":[1],"5":[2]}}`)
	s := dial(t, strings.SplitN(c.ZooKeeperConnect(), "/", 2)[0]+f.chroot)
	defer s.Close()
	many, single, err := metadata.ReadTopicsBoth(s, []string{"a", "none", "m", "b"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"[{0 [1 2]} {1 [2 1]}]", "no node", "malformed", "[{0 [3]}]"}
	if !slices.Equal(many, want) || !slices.Equal(single, want) {
		t.Errorf("batched %q, single %q, want %q", many, single, want)
	}

	// A resync's read given the versions held decodes only what was
	// written since, even when written with the same data.
	ab := []string{"a", "b"}
	had, _, _, err := metadata.ReadTopicsHad(s, ab, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.put("/brokers/topics/b", `{"version":1,"partitions":{"0":[3]}}`)
	_, same, text, err := metadata.ReadTopicsHad(s, ab, had)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(same, []bool{true, false}) || text[1] != "[{0 [3]}]" {
		t.Errorf("read again given %v: unchanged %v, %q; want a unchanged, b read", had, same, text)
	}
}

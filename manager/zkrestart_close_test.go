package manager_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// TestCloseAfterZooKeeperRestart: ZooKeeper restarts (SIGTERM, down a few
// seconds) under two consuming members. One member is closed while
// ZooKeeper is still starting, its session suspended: Close returns
// within CloseTimeout all the same. The other keeps running: its session
// resumes (the same session, not a new one) once ZooKeeper serves again,
// well within the session timeout's reach, and the group is balanced
// again.
func TestCloseAfterZooKeeperRestart(t *testing.T) {
	c := testcluster.Start(t, testcluster.Brokers(1))
	ctx := context.Background()
	const parts = 24
	topic, group, sub := newTopicRF(t, c, parts, 1)
	rec := newRecorder(t)
	const closeTimeout = 10 * time.Second
	short := func(cfg *manager.Config) { cfg.CloseTimeout = closeTimeout }
	a := join(t, c, group, sub, "a", rec, joinOpts{configure: short})
	b := join(t, c, group, sub, "b", rec, joinOpts{configure: short})
	await(t, 60*time.Second, "2 balanced", func() bool { return balanced(parts, a, b) })
	prod := testcluster.StartProducer(t, c, topic, parts, 0, 48, 50*time.Millisecond)
	await(t, 30*time.Second, "consuming under load", func() bool { return rec.By("a") > 500 && rec.By("b") > 500 })
	sessionB := b.c.Stats().SessionID

	if err := c.StopZooKeeper(); err != nil {
		t.Fatal(err)
	}
	await(t, 30*time.Second, "sessions suspended", func() bool {
		return !a.c.Stats().SessionHealthy && !b.c.Stats().SessionHealthy
	})
	started := make(chan error, 1)
	go func() { started <- c.StartZooKeeper(ctx) }()
	// Close a while ZooKeeper starts: its session is suspended, the
	// connection may be half-open to a server not serving yet.
	time.Sleep(time.Second) // part of the fault's timing, not a synchronisation
	took, _, err := closeWithin(t, a.c, closeTimeout)
	t.Logf("Close during the ZooKeeper restart returned after %v: %v", took.Round(time.Millisecond), err)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	took = await(t, 60*time.Second, "b's session healthy again", func() bool { return b.c.Stats().SessionHealthy })
	t.Logf("b's session healthy %v after ZooKeeper serves again", took)
	if got := b.c.Stats().SessionID; got != sessionB {
		t.Errorf("b has session 0x%x after the restart, want its old session 0x%x resumed", got, sessionB)
	}
	if took > 6*time.Second {
		t.Errorf("b's session resumed %v after ZooKeeper served again, want within the session timeout", took)
	}
	await(t, 60*time.Second, "b owns every partition", func() bool { return balanced(parts, b) })
	prod.Halt(t)
}

// TestCloseWhileHandshakeUnanswered: the member's ZooKeeper connection
// drops and its reconnects reach a server that accepts the connection but
// never answers the connect request (a ZooKeeper still starting, or going
// down, on a loaded machine). Close, a second after the session was
// suspended, returns at once: without a lease there is nothing to commit,
// and the loop, waiting for ZooKeeper in an owner check, gives up.
// (zkconn's TestSessionResumesAfterUnansweredHandshake: the session
// resumes once the server answers.)
func TestCloseWhileHandshakeUnanswered(t *testing.T) {
	c := testcluster.Shared(t)
	const parts = 24
	topic, group, sub := newTopicRF(t, c, parts, 1)
	front := testcluster.ZooKeeperProxy(t, c)
	silent := testcluster.ZooKeeperProxy(t, c) // stalled for good: accepts, never answers
	silent.Stall()

	rec := newRecorder(t)
	const closeTimeout = 10 * time.Second
	short := func(cfg *manager.Config) {
		cfg.CloseTimeout = closeTimeout
		cfg.UnownedCheck = time.Second // the loop reads ZooKeeper often
	}
	a := join(t, c, group, sub, "a", rec, joinOpts{configure: short, zk: front.Addr() + c.Chroot()})
	await(t, 60*time.Second, "a owns every partition", func() bool { return balanced(parts, a) })
	prod := testcluster.StartProducer(t, c, topic, parts, 0, 48, 50*time.Millisecond)
	defer prod.Halt(t)
	await(t, 30*time.Second, "consuming under load", func() bool { return rec.By("a") > 500 })

	front.SetUpstream(silent.Addr())
	front.Cut()
	await(t, 30*time.Second, "a's reconnect waits on a silent server", func() bool { return silent.Conns() > 0 })
	await(t, 30*time.Second, "a suspended", func() bool { return !a.c.Stats().SessionHealthy })
	// The server still does not answer: the loop's owner checks wait for
	// a connection.
	time.Sleep(time.Second) // the fault's timing: Close comes a while after
	took, inTime, err := closeWithin(t, a.c, closeTimeout)
	t.Logf("Close returned after %v: %v", took.Round(time.Millisecond), err)
	// Without a lease nothing can be committed: nothing to wait for,
	// ZooKeeper least of all.
	if inTime && took > 2*time.Second {
		t.Errorf("Close of a member without a lease took %v, want it at once (under 2s)", took)
	}
}

// closeWithin closes cons and returns how long Close took and what it
// returned; inTime is false, and t has failed with every goroutine's
// stack, when Close did not return within closeTimeout + 3 s.
func closeWithin(t *testing.T, cons *manager.Consumer, closeTimeout time.Duration) (took time.Duration, inTime bool, err error) {
	t.Helper()
	begun := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- cons.Close() }()
	select {
	case err = <-closed:
		return time.Since(begun), true, err
	case <-time.After(closeTimeout + 3*time.Second):
		buf := make([]byte, 4<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("Close did not return within CloseTimeout %v + 3s; goroutines:\n%s", closeTimeout, buf[:n])
		err = <-closed
		return time.Since(begun), false, err
	}
}

package zkconn_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }

func awaitStatus(t *testing.T, s *zkconn.Session, what string, cond func(zkconn.Status) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond(s.Status()) {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("timed out waiting for %s (status %+v)", what, s.Status())
		}
		select {
		case <-s.Changes():
		case <-time.After(50 * time.Millisecond): // Healthy also changes with time alone
		}
	}
	return time.Since(start)
}

// TestSessionSuspendExpireRenew drives one session through a stalled
// connection: it turns unhealthy after about 2/3 of the timeout although
// go-zookeeper may still report a TCP connection, its epoch ends when the
// stall outlasts the timeout, and a new session (new epoch, ephemeral nodes
// gone) follows once the connection is back.
func TestSessionSuspendExpireRenew(t *testing.T) {
	c := testcluster.Shared(t)
	ignore := goleak.IgnoreCurrent()
	p := testcluster.ZooKeeperProxy(t, c)
	const timeout = 4 * time.Second
	chroot := "/zkconn-" + testcluster.Name(t, "s")
	s, err := zkconn.Dial(zkconn.Config{Servers: []string{p.Addr()}, Chroot: chroot, SessionTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	st, epochDone := s.Epoch()
	if !st.HasSession || !st.Healthy || st.Epoch != 1 {
		t.Fatalf("fresh session: %+v", st)
	}
	if err := s.CreateParents("/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create("/a/eph", []byte("x"), zk.FlagEphemeral, nil); err != nil {
		t.Fatal(err)
	}
	// The chroot is applied: the node is visible at the full path.
	zc := testcluster.ZooKeeper(t, c)
	if ok, _, _ := zc.Exists(chroot + "/a/eph"); !ok {
		t.Fatalf("%s/a/eph not found", chroot)
	}

	// Functions waiting for the epoch's end: one that runs, one taken back.
	ended := make(chan struct{})
	s.AfterEpoch(epochDone, func() { close(ended) })
	stop := s.AfterEpoch(epochDone, func() { t.Error("an AfterEpoch function taken back was run") })
	if !stop() {
		t.Error("AfterEpoch's stop: false before the epoch ended")
	}

	p.Stall()
	stalled := time.Now()
	took := awaitStatus(t, s, "unhealthy", func(st zkconn.Status) bool { return !st.Healthy })
	if took < timeout/3 || took > timeout+2*time.Second {
		t.Errorf("unhealthy after %v; want about 2/3 of %v", took, timeout)
	}
	t.Logf("stalled connection: unhealthy after %v (timeout %v)", took, timeout)
	select {
	case <-epochDone:
		t.Fatal("epoch ended before the stall lifted")
	default:
	}
	// Keep the stall until the server has expired the session.
	deadline := stalled.Add(timeout + 2*time.Second)
	for time.Now().Before(deadline) {
		if ok, _, _ := zc.Exists(chroot + "/a/eph"); !ok {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling the server's view
	}
	if ok, _, _ := zc.Exists(chroot + "/a/eph"); ok {
		t.Fatal("the server kept the ephemeral node past the session timeout")
	}
	p.Resume()
	select {
	case <-epochDone:
	case <-time.After(30 * time.Second):
		t.Fatal("epoch did not end after the session expired")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the AfterEpoch function did not run when the epoch ended")
	}
	late := make(chan struct{}) // registered after the end: runs at once
	if s.AfterEpoch(epochDone, func() { close(late) })() {
		t.Error("AfterEpoch's stop: true after the epoch ended")
	}
	select {
	case <-late:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterEpoch on an ended epoch did not run its function")
	}
	awaitStatus(t, s, "a new healthy session", func(st zkconn.Status) bool { return st.Healthy && st.Epoch == 2 })
	if _, _, err := s.Get("/a/eph"); !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("ephemeral node of the expired session: %v, want ErrNoNode", err)
	}
	s.Close()
	s.Close() // idempotent
	zc.Close()
	p.Close()
	goleak.VerifyNone(t, ignore)
}

// TestSessionOnNodeEvent: a node event hook sees the events of the watches
// set on its node (with the full path), only those, and nothing once
// removed.
func TestSessionOnNodeEvent(t *testing.T) {
	s, chroot := chrootedSession(t, "h")
	if err := s.CreateParents("/n"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create("/other", nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	events := make(chan zk.Event, 16)
	remove := s.OnNodeEvent("/n", func(ev zk.Event) { events <- ev })
	next := func(want zk.EventType) {
		t.Helper()
		select {
		case ev := <-events:
			if ev.Type != want || ev.Path != chroot+"/n" {
				t.Errorf("event %v on %s; want %v on %s/n", ev.Type, ev.Path, want, chroot)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %v event", want)
		}
	}
	watch := func(p string) {
		t.Helper()
		if _, _, _, err := s.GetWFull(p); err != nil {
			t.Fatal(err)
		}
	}
	watch("/n")
	watch("/other")
	if _, err := s.Set("/other", []byte("x"), -1); err != nil { // another node's event
		t.Fatal(err)
	}
	if _, err := s.Set("/n", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeDataChanged)
	watch("/n")
	if err := s.Delete("/n", -1); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeDeleted)
	remove()
	if _, err := s.Create("/n", nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	_, _, ch, err := s.GetWFull("/n")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("/n", -1); err != nil {
		t.Fatal(err)
	}
	select { // the watch fired: a hook still set would have seen it first
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not fire")
	}
	select {
	case ev := <-events:
		t.Errorf("a removed hook got %v on %s", ev.Type, ev.Path)
	default:
	}
}

// chrootedSession opens a session on the shared cluster's ZooKeeper under
// a chroot of its own (named after the test and tag), closed when the test
// ends.
func chrootedSession(t *testing.T, tag string) (*zkconn.Session, string) {
	t.Helper()
	c := testcluster.Shared(t)
	chroot := "/zkconn-" + testcluster.Name(t, tag)
	s, err := zkconn.Dial(zkconn.Config{Servers: []string{c.ZooKeeperAddr()}, Chroot: chroot, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, chroot
}

// TestSessionNegotiatedTimeout: a session asked for more than the server
// grants (the test ZooKeeper's maxSessionTimeout is 20 ticks of 500 ms)
// reports, and measures its suspension against, the granted timeout.
func TestSessionNegotiatedTimeout(t *testing.T) {
	c := testcluster.Shared(t)
	s, err := zkconn.Dial(zkconn.Config{Servers: []string{c.ZooKeeperAddr()}, SessionTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := 20 * time.Duration(testcluster.DefaultOptions().ZKTickMs) * time.Millisecond
	testcluster.Poll(10*time.Second, time.Millisecond, func() bool { return s.Status().Timeout == want })
	if got := s.Status().Timeout; got != want {
		t.Fatalf("Status().Timeout = %v; want the negotiated %v", got, want)
	}
}

// TestSessionLease: Lease holds while ZooKeeper answers, its end is 2/3
// of the timeout after a request's send, and a stalled connection ends it
// on the clock alone, no later than Status().Healthy turns false; once
// ZooKeeper answers again it holds again, for the same session.
func TestSessionLease(t *testing.T) {
	c := testcluster.Shared(t)
	ignore := goleak.IgnoreCurrent()
	p := testcluster.ZooKeeperProxy(t, c)
	const timeout = 4 * time.Second
	window := timeout * 2 / 3
	s, err := zkconn.Dial(zkconn.Config{Servers: []string{p.Addr()}, SessionTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Close()
		p.Close()
		goleak.VerifyNone(t, ignore)
	}()
	before := time.Now()
	if _, _, err := s.Exists("/"); err != nil {
		t.Fatal(err)
	}
	until, id, ok := s.Lease()
	if !ok || id != s.Status().SessionID || id == 0 {
		t.Fatalf("fresh session: lease ok %v, id %x (session %x)", ok, id, s.Status().SessionID)
	}
	// The request was sent between before and after; a ping may have
	// been sent later, never after now.
	if until.Before(before.Add(window)) || until.After(time.Now().Add(window)) {
		t.Fatalf("lease ends %v after the request, want within [%v, %v]", until.Sub(before), window, time.Now().Add(window).Sub(before))
	}

	p.Stall()
	stalled := time.Now()
	var ended time.Time
	for {
		_, _, ok := s.Lease()
		healthy := s.Status().Healthy
		if !ok {
			ended = time.Now()
			break
		}
		if !healthy {
			t.Fatal("Status().Healthy turned false while the lease still held")
		}
		if time.Since(stalled) > timeout+5*time.Second {
			t.Fatal("the lease still holds long after the stall began")
		}
		time.Sleep(time.Millisecond) // polling the clock: no event marks the lease's end
	}
	took := ended.Sub(stalled)
	// The last answered request was sent before the stall, at most two
	// ticks (a ping every timeout/6 while idle) plus scheduling before it.
	if took > window+500*time.Millisecond || took < window-timeout/6-time.Second {
		t.Errorf("lease ended %v after the stall, want about %v", took, window)
	}
	if u, _, ok := s.Lease(); ok || !time.Now().After(u) {
		t.Fatalf("lease after its end: ok %v, until %v from now", ok, time.Until(u))
	}
	p.Resume()
	resumed := time.Now()
	testcluster.Await(t, 10*time.Second, 5*time.Millisecond, "the lease back", func() bool { _, _, ok := s.Lease(); return ok })
	u, id2, _ := s.Lease()
	if id2 != id {
		t.Fatalf("session %x after a stall shorter than the timeout, want %x", id2, id)
	}
	// A request sent during the stall and answered after it counts from
	// its send, before the resume: no further than a window past it.
	if u.After(time.Now().Add(window)) {
		t.Errorf("lease after the stall ends %v from now, more than %v", time.Until(u), window)
	}
	// The pings sent after the resume extend it.
	testcluster.Await(t, 10*time.Second, 5*time.Millisecond, "the lease renewed by a ping after the resume", func() bool {
		u, _, ok := s.Lease()
		return ok && u.After(resumed.Add(window))
	})
}

// TestSessionCloseEndsSession: Close half-closes the connection after the
// close request instead of waiting for its reply, and ZooKeeper still ends
// the session at once: the session's ephemeral node is gone within half
// the session timeout after Close returned, where a close the server had
// dropped would leave it until the session expired. Over plain TCP and
// over TLS.
func TestSessionCloseEndsSession(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[secure], func(t *testing.T) {
			c := testcluster.Shared(t)
			cfg := zkconn.Config{Servers: []string{c.ZooKeeperAddr()}, SessionTimeout: 10 * time.Second}
			if secure {
				c = testcluster.SharedSecure(t)
				tlsCfg, err := c.PKI().ClientTLS(true)
				if err != nil {
					t.Fatal(err)
				}
				cfg = zkconn.Config{Servers: []string{strings.TrimSuffix(c.ZooKeeperSecureConnect(), c.Chroot())}, SessionTimeout: 10 * time.Second, TLS: tlsCfg}
			}
			node := "/" + testcluster.Name(t, "eph")
			s, err := zkconn.Dial(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			obs, err := zkconn.Dial(zkconn.Config{Servers: []string{c.ZooKeeperAddr()}, SessionTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer obs.Close()
			ok, _, ev, err := obs.ExistsW(node)
			if err != nil || !ok {
				t.Fatalf("observer: exists %v, %v", ok, err)
			}
			began := time.Now()
			s.Close()
			closed := time.Now()
			t.Logf("Close took %v", closed.Sub(began))
			select {
			case e := <-ev:
				if e.Type != zk.EventNodeDeleted {
					t.Fatalf("observer: event %v; want the node deleted", e.Type)
				}
				t.Logf("node gone %v after Close returned", time.Since(closed))
			case <-time.After(5 * time.Second):
				t.Fatalf("the closed session's ephemeral node still exists 5s after Close: ZooKeeper did not process the close")
			}
		})
	}
}

// TestSessionIdlePings: a session whose lease nobody asks for leaves the
// pings to go-zookeeper (one every third of the session timeout); one
// whose lease is asked for sends one every sixth in all (the monitor
// pings when nothing sent in the last sixth was answered, go-zookeeper's
// own pings counting). ZooKeeper's own count of the packets it received
// on the connection (cons, recved) over 12 s of a 6 s session: idle, at
// most 6 pings and 3 for the edges and a late go-zookeeper ping (the
// monitor's own every sixth would make 12 or more); with Lease called
// every 50 ms, at least 12 less 3.
func TestSessionIdlePings(t *testing.T) {
	c := testcluster.Shared(t)
	ignore := goleak.IgnoreCurrent()
	const timeout = 6 * time.Second
	s, err := zkconn.Dial(zkconn.Config{Servers: c.ZooKeeperAddrs(), SessionTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Close()
		goleak.VerifyNone(t, ignore)
	}()
	recved := func() int {
		t.Helper()
		out, err := testcluster.FourLetter(c.ZooKeeperAddrs()[0], "cons")
		if err != nil {
			t.Fatal(err)
		}
		sid := fmt.Sprintf("sid=0x%x", s.Status().SessionID)
		for _, line := range strings.Split(out, "\n") {
			if !strings.Contains(line, sid+",") && !strings.Contains(line, sid+")") {
				continue
			}
			_, rest, _ := strings.Cut(line, "recved=")
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			if err != nil {
				t.Fatalf("cons line %q: %v", line, err)
			}
			return n
		}
		t.Fatalf("no connection of %s in cons:\n%s", sid, out)
		return 0
	}
	time.Sleep(timeout / 3) // past the first pings of the new session
	before, wakes := recved(), zkconn.MonitorWakes(s)
	const window = 2 * timeout
	time.Sleep(window)
	got, woke := recved()-before, zkconn.MonitorWakes(s)-wakes
	t.Logf("%d packets received on the connection and %d wakes of the monitor over %v of an idle %v session", got, woke, window, timeout)
	if want := int(window/(timeout/3)) + 3; got > want {
		t.Errorf("%d packets over %v idle; want at most %d (go-zookeeper's ping every timeout/3 alone)", got, window, want)
	}
	// go-zookeeper's pings are answered: each answer moves the monitor's
	// wake past the next (pingAnswered), where it would otherwise wake
	// once per ping.
	if woke > 1 {
		t.Errorf("the monitor woke %d times over %v idle; want at most 1 while go-zookeeper's pings are answered", woke, window)
	}
	if _, _, ok := s.Lease(); !ok {
		t.Error("no lease after the idle window")
	}

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // a member handing out: Lease before each message
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				s.Lease()
			}
		}
	}()
	time.Sleep(timeout / 3) // the monitor's next wake sees the lease in use
	before, wakes = recved(), zkconn.MonitorWakes(s)
	time.Sleep(window)
	got, woke = recved()-before, zkconn.MonitorWakes(s)-wakes
	close(stop)
	<-done
	t.Logf("%d packets received on the connection and %d wakes of the monitor over %v of a %v session whose lease is in use", got, woke, window, timeout)
	if want := int(window/(timeout/6)) - 3; got < want {
		t.Errorf("%d packets over %v with the lease in use; want at least %d (a ping every timeout/6)", got, window, want)
	}

}

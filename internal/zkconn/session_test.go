package zkconn_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/faultproxy"
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
	p, err := faultproxy.New(c.ZooKeeperAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
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
	zc, err := c.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	if ok, _, _ := zc.Exists(chroot + "/a/eph"); !ok {
		t.Fatalf("%s/a/eph not found", chroot)
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

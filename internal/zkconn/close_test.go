package zkconn_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"go.uber.org/goleak"
)

// TestCloseRacingRequests closes sessions while requests keep going out
// on them from other goroutines (as the session's own pinger may),
// round after round: in most rounds some request is queued after
// go-zookeeper's close request, which half-closes the connection. Close
// returns, and no goroutine of go-zookeeper is left once it did.
func TestCloseRacingRequests(t *testing.T) {
	c := testcluster.Shared(t)
	ignore := goleak.IgnoreCurrent()
	const rounds, callers = 40, 4
	for round := range rounds {
		before := zkWaiting()
		s, err := zkconn.Dial(zkconn.Config{Servers: []string{c.ZooKeeperAddr()}, SessionTimeout: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var answered atomic.Int64
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for {
					if _, _, err := s.Exists("/"); err != nil {
						return // closed
					}
					answered.Add(1)
				}
			})
		}
		// Close while every caller is in the middle of its requests.
		testcluster.Await(t, 30*time.Second, time.Millisecond, "requests answered", func() bool { return answered.Load() >= 2*callers })
		closeWithin(t, s, 30*time.Second, fmt.Sprintf("round %d: ", round))
		wg.Wait() // the callers out of go-zookeeper's code
		// Close waited for go-zookeeper's goroutines: none of them still
		// waits for anything (one may be finishing, runnable).
		if after := zkWaiting(); len(after) > len(before) {
			t.Fatalf("round %d: %d goroutines of go-zookeeper waiting once Close returned, %d before Dial:\n%s", round, len(after), len(before), strings.Join(after, "\n\n"))
		}
	}
	goleak.VerifyNone(t, ignore)
}

// TestSessionCloseStalledServer: the server stops answering (its
// connection stalls) just before Close, while the session is still
// healthy. go-zookeeper's Close gives up on its close request after a
// second, but its connection goroutines go on until the connection's read
// deadline; Close waits for them: none is left once it returned.
func TestSessionCloseStalledServer(t *testing.T) {
	c := testcluster.Shared(t)
	ignore := goleak.IgnoreCurrent()
	p := testcluster.ZooKeeperProxy(t, c)
	before := zkWaiting()
	s, err := zkconn.Dial(zkconn.Config{Servers: []string{p.Addr()}, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Exists("/"); err != nil {
		t.Fatal(err)
	}
	p.Stall()
	if !s.Status().Healthy {
		t.Fatal("the session is not healthy right after a reply")
	}
	began := time.Now()
	closeWithin(t, s, 30*time.Second, "")
	t.Logf("Close took %v", time.Since(began))
	if after := zkWaiting(); len(after) > len(before) {
		t.Fatalf("%d goroutines of go-zookeeper waiting once Close returned, %d before Dial:\n%s", len(after), len(before), strings.Join(after, "\n\n"))
	}
	p.Close()
	goleak.VerifyNone(t, ignore)
}

// zkWaiting returns the stacks of the goroutines in go-zookeeper's
// connection code that wait for something. A goroutine running, runnable
// or in a system call is not counted: go-zookeeper's send and receive
// goroutines signal their end before their last deferred calls (closing
// the connection, a channel).
func zkWaiting() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		busy := strings.HasSuffix(head, " [running]:") || strings.HasSuffix(head, " [runnable]:") || strings.HasSuffix(head, " [syscall]:")
		if !busy && strings.Contains(g, "github.com/go-zookeeper/zk.(*Conn)") {
			out = append(out, g)
		}
	}
	return out
}

// closeWithin closes s and fails t (the message prefixed with what) when
// Close has not returned within d.
func closeWithin(t *testing.T, s *zkconn.Session, d time.Duration, what string) {
	t.Helper()
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(d):
		t.Fatalf("%sClose still blocked after %v", what, d)
	}
}

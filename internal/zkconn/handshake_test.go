package zkconn_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// TestSessionResumesAfterUnansweredHandshake: the connection drops and the
// reconnect reaches a server that accepts it but never answers the
// connect request (a ZooKeeper starting or stopping on a loaded machine).
// Once the server answers again the session resumes, the same session,
// within the session timeout: the unanswered connection is given up after
// 2/3 of the timeout, not go-zookeeper's 10 x 2/3. Meanwhile, after
// Interrupt, an operation fails at once instead of waiting for a
// connection.
func TestSessionResumesAfterUnansweredHandshake(t *testing.T) {
	c := testcluster.Shared(t)
	front := testcluster.ZooKeeperProxy(t, c)
	silent := testcluster.ZooKeeperProxy(t, c) // stalled for good: accepts, never answers
	silent.Stall()
	const timeout = 6 * time.Second
	s, err := zkconn.Dial(zkconn.Config{Servers: []string{front.Addr()}, SessionTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := s.Status().SessionID

	front.SetUpstream(silent.Addr())
	front.Cut()
	testcluster.Await(t, 30*time.Second, 10*time.Millisecond, "a reconnect waiting on the silent server", func() bool { return silent.Conns() > 0 })
	front.SetUpstream(c.ZooKeeperAddr()) // the next connection is answered
	back := time.Now()
	s.Interrupt()
	begun := time.Now()
	if _, _, err := s.Children("/"); !errors.Is(err, zkconn.ErrInterrupted) {
		t.Errorf("Children while reconnecting after Interrupt: %v, want ErrInterrupted", err)
	}
	if took := time.Since(begun); took > time.Second {
		t.Errorf("Children after Interrupt took %v, want at once", took)
	}
	took := awaitStatus(t, s, "healthy again on a new connection", func(st zkconn.Status) bool {
		return st.Healthy && st.LastAnswered.After(back)
	})
	if st := s.Status(); st.SessionID != id || st.Epoch != 1 {
		t.Errorf("after the unanswered handshake: session 0x%x epoch %d, want 0x%x resumed (epoch 1)", st.SessionID, st.Epoch, id)
	}
	if took > timeout {
		t.Errorf("session healthy %v after the server answered again, want within the session timeout %v", took, timeout)
	}
	t.Logf("session resumed %v after the server answered again (%v since the cut)", took, time.Since(back))
	// Once connected, a session serves requests after Interrupt too.
	testcluster.Await(t, 5*time.Second, 10*time.Millisecond, "Children answered after Interrupt", func() bool {
		_, _, err := s.Children("/")
		return err == nil
	})
}

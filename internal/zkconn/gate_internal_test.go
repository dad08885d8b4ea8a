package zkconn

import (
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"
)

// packet frames a ZooKeeper request: length, xid, opcode, body.
func packet(xid, op int32, body int) []byte {
	b := make([]byte, 12+body)
	binary.BigEndian.PutUint32(b[0:4], uint32(8+body))
	binary.BigEndian.PutUint32(b[4:8], uint32(xid))
	binary.BigEndian.PutUint32(b[8:12], uint32(op))
	return b
}

// reply frames a server reply of n body bytes.
func reply(n int) []byte {
	b := make([]byte, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	return b
}

// gatedPipe returns a gated client end and the server end, with the
// connect reply (36 bytes) and one further reply waiting to be read.
func gatedPipe(t *testing.T, gated bool) (*gatedConn, net.Conn) {
	t.Helper()
	client, server := net.Pipe()
	g := newGatedConn(client, gated)
	t.Cleanup(func() { g.Close(); server.Close() })
	go func() {
		// The server: swallow whatever the client writes; send the
		// connect reply and one more reply.
		go func() {
			buf := make([]byte, 1024)
			for {
				if _, err := server.Read(buf); err != nil {
					return
				}
			}
		}()
		server.Write(reply(36))
		server.Write(reply(16))
	}()
	// go-zookeeper reads the connect reply's length, then its body.
	if _, err := readFull(g, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := readFull(g, 36); err != nil {
		t.Fatal(err)
	}
	return g, server
}

func readFull(c net.Conn, n int) ([]byte, error) {
	b := make([]byte, n)
	for got := 0; got < n; {
		k, err := c.Read(b[got:])
		got += k
		if err != nil {
			return b[:got], err
		}
	}
	return b, nil
}

// readAsync reads the next reply's length in the background.
func readAsync(c net.Conn) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := readFull(c, 4)
		done <- err
	}()
	return done
}

func TestGatedConnFirstConnectionNotGated(t *testing.T) {
	g, _ := gatedPipe(t, false)
	select {
	case err := <-readAsync(g):
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a reply on an ungated connection was held back")
	}
}

func TestGatedConnReleasedBySetWatches(t *testing.T) {
	g, _ := gatedPipe(t, true)
	g.mu.Lock()
	g.timer.Stop() // only the setWatches write may open the gate here
	g.mu.Unlock()
	done := readAsync(g)
	if _, err := g.Write(packet(1, 4 /* getData */, 10)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("a reply was read before the watches were re-sent (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := g.Write(packet(2, opSetWatches, 30)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reply stayed held after the setWatches request was written")
	}
}

func TestGatedConnReleasedAfterSettle(t *testing.T) {
	g, _ := gatedPipe(t, true)
	start := time.Now()
	select {
	case err := <-readAsync(g):
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("with no watches to re-send, the reply stayed held")
	}
	if took := time.Since(start); took < settleTime/2 {
		t.Errorf("reply read after %v; want it held about settleTime (%v)", took, settleTime)
	}
}

func TestGatedConnCloseWakesRead(t *testing.T) {
	g, _ := gatedPipe(t, true)
	g.mu.Lock()
	g.timer.Stop()
	g.mu.Unlock()
	done := readAsync(g)
	g.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close left a gated read blocked")
	}
}

package zkconn

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
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
	g := newGatedConn(client, client, gated)
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
	awaitRead(t, readAsync(g), 5*time.Second, "a reply on an ungated connection was held back")
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
	awaitRead(t, done, 5*time.Second, "the reply stayed held after the setWatches request was written")
}

func TestGatedConnReleasedAfterSettle(t *testing.T) {
	g, _ := gatedPipe(t, true)
	start := time.Now()
	awaitRead(t, readAsync(g), 10*time.Second, "with no watches to re-send, the reply stayed held")
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

// TestGatedConnHalfClosesAfterCloseRequest: once the session's close
// request is written, the server reads it and then the end of the stream
// (the client half-closed), while the client can still read what the
// server sends; other requests leave the connection open.
func TestGatedConnHalfClosesAfterCloseRequest(t *testing.T) {
	g, server := gatedTCP(t)

	getData := packet(1, 4, 8)
	if _, err := g.Write(getData); err != nil {
		t.Fatal(err)
	}
	if b, err := readFull(server, len(getData)); err != nil {
		t.Fatalf("server read the request: %d bytes, %v", len(b), err)
	}
	closeReq := packet(2, opCloseSession, 0)
	if _, err := g.Write(closeReq); err != nil {
		t.Fatal(err)
	}
	if b, err := readFull(server, len(closeReq)); err != nil {
		t.Fatalf("server read the close request: %d bytes, %v", len(b), err)
	}
	// A getData left the connection open; after the close request the
	// server reads the end of the stream.
	if n, err := server.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("server read after the close request: %d bytes, %v; want io.EOF (the client half-closed)", n, err)
	}
	// The client still reads.
	if _, err := server.Write(reply(16)); err != nil {
		t.Fatal(err)
	}
	_ = g.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := readFull(g, 20); err != nil {
		t.Fatalf("client read after its half-close: %d bytes, %v", len(b), err)
	}
}

// TestHalfCloser: TCP and TLS connections get a half-closer (for TLS the
// close_notify alert and the FIN); a connection with neither gets none.
func TestHalfCloser(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if halfCloser(a) != nil {
		t.Error("net.Pipe has no CloseWrite; want no half-closer")
	}
	if halfCloser(&net.TCPConn{}) == nil {
		t.Error("a TCP connection has no half-closer")
	}
	if halfCloser(tls.Client(&net.TCPConn{}, &tls.Config{})) == nil {
		t.Error("a TLS connection has no half-closer")
	}
}

// TestGatedConnNoWriteFails: go-zookeeper never sees a write fail. A
// request after the close request is not written (the server reads the
// end of the stream right after the close) and is reported written; a
// write that fails closes the connection (a read ends) and is reported
// written.
func TestGatedConnNoWriteFails(t *testing.T) {
	g, server := gatedTCP(t)

	closeReq := packet(1, opCloseSession, 0)
	if _, err := g.Write(closeReq); err != nil {
		t.Fatal(err)
	}
	late := packet(2, 3, 8) // an exists that raced the close
	if n, err := g.Write(late); n != len(late) || err != nil {
		t.Fatalf("a request after the close request: %d, %v; want %d, nil", n, err, len(late))
	}
	if b, err := readFull(server, len(closeReq)); err != nil {
		t.Fatalf("server read the close request: %d bytes, %v", len(b), err)
	}
	if n, err := server.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("server read after the close request: %d bytes, %v; want io.EOF, nothing written after it", n, err)
	}

	// A write that fails: the connection is closed under the wrapper.
	a, b := net.Pipe()
	defer b.Close()
	f := newGatedConn(a, a, false)
	a.Close()
	req := packet(3, 4, 8)
	if n, err := f.Write(req); n != len(req) || err != nil {
		t.Fatalf("a failed write: %d, %v; want %d, nil", n, err, len(req))
	}
	select {
	case <-f.closed:
	default:
		t.Fatal("a failed write left the connection open")
	}
}

// gatedTCP returns an ungated gatedConn over a loopback TCP connection and
// the server's end of it (reads bounded by 10 s); both are closed when t
// ends.
func gatedTCP(t *testing.T) (*gatedConn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	g := newGatedConn(raw, raw, false)
	t.Cleanup(func() { g.Close() })
	server := <-accepted
	t.Cleanup(func() { server.Close() })
	_ = server.SetReadDeadline(time.Now().Add(10 * time.Second))
	return g, server
}

// awaitRead fails t unless a read ends on done without an error within
// wait; held says what a timeout means.
func awaitRead(t *testing.T, done <-chan error, wait time.Duration, held string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal(held)
	}
}

package offsets

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// acceptOne listens on loopback and returns the address and a channel
// that yields the one accepted connection.
func acceptOne(t *testing.T) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			t.Cleanup(func() { c.Close() })
			ch <- c
		}
		close(ch)
	}()
	return ln.Addr().String(), ch
}

// readReset reads from c until an error and reports whether the peer
// reset the connection (RST: SO_LINGER 0) rather than closing it (EOF).
func readReset(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if err == nil {
		return false // EOF: an orderly close, with whatever was queued sent first
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading from the closed link: %v, want ECONNRESET or EOF", err)
	}
	return true
}

// dialFenced dials a loopback listener through a lingerDialer and returns
// the fenced connection and the peer's side, closed when the test ends.
func dialFenced(t *testing.T) (*fencedConn, net.Conn) {
	t.Helper()
	addr, accepted := acceptOne(t)
	d := &lingerDialer{d: net.Dialer{Timeout: 5 * time.Second}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*fencedConn), <-accepted
}

// TestFencedConnDeadline: a write within the deadline goes through; a
// write past it is refused with ErrLeaseExpired and tears the connection
// down with a reset (SO_LINGER 0), so the kernel sends nothing queued.
func TestFencedConnDeadline(t *testing.T) {
	fc, peer := dialFenced(t)
	fc.allow(time.Now().Add(time.Minute))
	if _, err := fc.Write([]byte("in time")); err != nil {
		t.Fatalf("write within the deadline: %v", err)
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(peer, buf); err != nil || string(buf) != "in time" {
		t.Fatalf("peer read %q, %v", buf, err)
	}
	fc.allow(time.Now().Add(-time.Millisecond))
	if _, err := fc.Write([]byte("late")); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("write past the deadline: %v, want ErrLeaseExpired", err)
	}
	if !fc.isAborted() {
		t.Fatal("the connection was not torn down")
	}
	if _, err := fc.Write([]byte("after")); !errors.Is(err, errLinkAborted) {
		t.Fatalf("write on a torn-down link: %v", err)
	}
	if !readReset(t, peer) {
		t.Fatal("the peer saw an orderly close: SO_LINGER 0 not in effect")
	}
}

// TestFencedConnBetweenRequests: outside a request (no deadline given)
// nothing may be written.
func TestFencedConnBetweenRequests(t *testing.T) {
	c, peer := dialFenced(t)
	c.allow(time.Time{})
	if _, err := c.Write([]byte("x")); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("write without a deadline: %v", err)
	}
	if !readReset(t, peer) {
		t.Fatal("the peer saw an orderly close")
	}
}

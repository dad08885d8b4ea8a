package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestNewRejectsInvalidUpstream(t *testing.T) {
	tests := []struct {
		name     string
		upstream string
	}{
		{"empty", ""},
		{"no port", "127.0.0.1"},
		{"empty port", "127.0.0.1:"},
		{"too many colons", "1:2:3"},
		{"unbracketed ipv6", "::1:80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.upstream)
			if err == nil {
				_ = p.Close()
				t.Fatalf("New(%q) succeeded, want error", tt.upstream)
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("New(%q) = %v, want ErrConfig", tt.upstream, err)
			}
			if !strings.Contains(err.Error(), tt.upstream) {
				t.Fatalf("error %q does not name the upstream %q", err, tt.upstream)
			}
		})
	}
}

func TestNewAcceptsHostPort(t *testing.T) {
	for _, up := range []string{"127.0.0.1:9092", "localhost:2181", "[::1]:2181", ":2181"} {
		p := newProxy(t, up)
		if got := p.Upstream(); got != up {
			t.Errorf("Upstream() = %q, want %q", got, up)
		}
		host, port, err := net.SplitHostPort(p.Addr())
		if err != nil || host != "127.0.0.1" || port == "0" {
			t.Errorf("Addr() = %q (%v), want 127.0.0.1 with a real port", p.Addr(), err)
		}
	}
}

func TestForwardsBothWays(t *testing.T) {
	up := startEcho(t, "hello:")
	p := newProxy(t, up.Addr())
	c := dial(t, p.Addr())

	expect(t, c, "hello:")
	for _, msg := range []string{"a", "ruok", strings.Repeat("x", 1000)} {
		send(t, c, msg)
		expect(t, c, msg)
	}
	expectConns(t, p, 1)
}

func TestForwardsLargePayload(t *testing.T) {
	up := startEcho(t, "")
	p := newProxy(t, up.Addr())
	c := dial(t, p.Addr())

	payload := pattern(4 << 20) // well beyond socket buffers and copyBufSize
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	_ = c.SetReadDeadline(time.Now().Add(prompt))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read echo: %v (after %d bytes)", err, len(got))
	}
	if err := <-werr; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("echo differs: got %d bytes, want %d", len(got), len(payload))
	}
}

func TestHalfCloseIsPropagated(t *testing.T) {
	p, c, s, _ := throughControlled(t, "req")

	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatalf("CloseWrite: %v", err)
	}
	_ = s.SetReadDeadline(time.Now().Add(prompt))
	if n, err := s.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("upstream read after client half-close = %d, %v; want 0, EOF", n, err)
	}
	// The other direction still works.
	send(t, s, "resp")
	expect(t, c, "resp")
	expectConns(t, p, 1)
}

func TestConnsCountsPairs(t *testing.T) {
	up := startEcho(t, "")
	p := newProxy(t, up.Addr())
	expectConns(t, p, 0)
	var cs []net.Conn
	for i := range 3 {
		c := dial(t, p.Addr())
		send(t, c, "x") // a round trip proves the pair is registered
		expect(t, c, "x")
		cs = append(cs, c)
		expectConns(t, p, i+1)
	}
	p.Cut()
	expectConns(t, p, 0)
	for _, c := range cs {
		expectBroken(t, c)
	}
}

func TestDialFailureClosesClient(t *testing.T) {
	up := startEcho(t, "")
	p := newProxy(t, up.Addr())
	// Reserve a port, then free it: nothing listens there any more. The
	// proxy's own port is in use, so the kernel cannot have handed it out.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()

	p.SetUpstream(dead)
	expectRefused(t, p.Addr())
	expectConns(t, p, 0)
}

func TestUpstreamIsSelfIsRefused(t *testing.T) {
	up := startEcho(t, "")
	p := newProxy(t, up.Addr())
	p.SetUpstream(p.Addr())
	expectRefused(t, p.Addr())
	expectConns(t, p, 0)
}

func TestSetUpstreamRedirectsNewConnections(t *testing.T) {
	a := startEcho(t, "A")
	b := startEcho(t, "B")
	p := newProxy(t, a.Addr())

	old := dial(t, p.Addr())
	expect(t, old, "A")

	p.SetUpstream(b.Addr())
	if got := p.Upstream(); got != b.Addr() {
		t.Fatalf("Upstream() = %q, want %q", got, b.Addr())
	}
	c := dial(t, p.Addr())
	expect(t, c, "B")

	// The existing connection still goes to A.
	send(t, old, "still-a")
	expect(t, old, "still-a")
	expectConns(t, p, 2)
}

func TestCloseIsIdempotentAndConcurrent(t *testing.T) {
	up := startEcho(t, "")
	p, err := New(up.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	send(t, c, "x")
	expect(t, c, "x")

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- p.Close() })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close after Close: %v", err)
	}
	expectConns(t, p, 0)
	expectBroken(t, c)
	if c2, err := net.DialTimeout("tcp", p.Addr(), prompt); err == nil {
		_ = c2.Close()
		t.Errorf("dial %s after Close succeeded, want refused", p.Addr())
	}
	// Fault controls after Close are harmless no-ops.
	p.Cut()
	p.Block()
	p.Unblock()
	p.Stall()
	p.Resume()
	p.SetUpstream("127.0.0.1:1")
}

// TestCloseStopsEveryGoroutine closes a proxy with connections in every
// state (forwarding, stalled mid-transfer, half-closed, waiting to dial)
// and checks nothing it started is left running.
func TestCloseStopsEveryGoroutine(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	// Registered before the test server's cleanups, so it runs after them.
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	up, conns := startControlled(t)

	p, err := New(up.Addr())
	if err != nil {
		t.Fatal(err)
	}
	forwarding := dial(t, p.Addr())
	send(t, forwarding, "a")
	expect(t, accepted(t, conns), "a")

	halfClosed := dial(t, p.Addr())
	send(t, halfClosed, "b")
	expect(t, accepted(t, conns), "b")
	if err := halfClosed.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}

	p.Stall()
	send(t, forwarding, "held")  // held by a stalled copier
	waiting := dial(t, p.Addr()) // accepted, not dialed while stalled
	send(t, waiting, "never forwarded")
	expectNothing(t, waiting) // proves the stall is in effect
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	expectBroken(t, forwarding)
	expectBroken(t, halfClosed)
	expectBroken(t, waiting)
	expectConns(t, p, 0)
}

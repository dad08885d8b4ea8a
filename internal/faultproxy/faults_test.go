package faultproxy

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

func TestStallHoldsBytesUntilResume(t *testing.T) {
	p, c, s, _ := throughControlled(t, "hi")

	p.Stall()
	send(t, c, "client->server")
	send(t, s, "server->client")
	expectNothing(t, s)
	expectNothing(t, c)
	expectConns(t, p, 1) // still connected: a stall is not an error

	p.Resume()
	expect(t, s, "client->server")
	expect(t, c, "server->client")

	// Forwarding continues normally afterwards.
	send(t, c, "again")
	expect(t, s, "again")
}

func TestStallKeepsOrderOfHeldBytes(t *testing.T) {
	p, c := throughEcho(t, "warm")

	p.Stall()
	payload := pattern(1 << 20) // more than one copy buffer and socket buffers
	werr := make(chan error, 1)
	go func() {
		// Blocks on back-pressure while stalled.
		_ = c.SetWriteDeadline(time.Now().Add(2 * prompt))
		_, err := c.Write(payload)
		werr <- err
	}()
	expectNothing(t, c)
	p.Resume()

	_ = c.SetReadDeadline(time.Now().Add(prompt))
	got := make([]byte, len(payload))
	if n, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read after Resume: %d of %d bytes: %v", n, len(payload), err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("bytes delivered after Resume differ from those sent while stalled")
	}
	if err := <-werr; err != nil {
		t.Fatalf("write: %v", err)
	}
}

func TestStallAppliesToNewConnections(t *testing.T) {
	up, conns := startControlled(t)
	p := newProxy(t, up.Addr())
	p.Stall()

	c := dial(t, p.Addr())
	send(t, c, "early")
	expectNothing(t, c)
	select {
	case s := <-conns:
		t.Fatalf("upstream accepted %v while stalled", s.RemoteAddr())
	default:
	}

	p.Resume()
	s := accepted(t, conns)
	expect(t, s, "early")
	send(t, s, "reply")
	expect(t, c, "reply")
}

func TestStallHoldsEndOfStream(t *testing.T) {
	p, c, s, _ := throughControlled(t, "x")

	p.Stall()
	send(t, s, "last words")
	if err := s.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	expectNothing(t, c) // neither the data nor the FIN gets through

	p.Resume()
	_ = c.SetReadDeadline(time.Now().Add(prompt))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "last words" {
		t.Fatalf("after Resume read %q, %v; want %q then EOF", got, err, "last words")
	}
}

func TestCutBreaksConnectionsPromptly(t *testing.T) {
	p, c := throughEcho(t, "x")

	start := time.Now()
	p.Cut()
	expectBroken(t, c)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("client noticed the cut after %v", d)
	}
	expectConns(t, p, 0)

	// New connections are still accepted and forwarded.
	c2 := dial(t, p.Addr())
	send(t, c2, "y")
	expect(t, c2, "y")
}

func TestCutResetsUpstreamSide(t *testing.T) {
	p, c, s, _ := throughControlled(t, "x")

	p.Cut()
	expectBroken(t, s)
	expectBroken(t, c)
}

func TestCutReleasesStalledConnections(t *testing.T) {
	p, c, s, _ := throughControlled(t, "x")

	p.Stall()
	send(t, c, "held")
	expectNothing(t, s)
	p.Cut()
	expectBroken(t, c)
	expectBroken(t, s)
	expectConns(t, p, 0)
	// Close (at cleanup) would hang if the stalled copier were still waiting;
	// goleak in TestMain checks it returned.
}

func TestBlockRefusesUntilUnblock(t *testing.T) {
	p, existing := throughEcho(t, "x")

	p.Block()
	expectBroken(t, existing)
	for range 3 {
		expectRefused(t, p.Addr()) // accepted by the kernel, reset by the proxy
	}
	expectConns(t, p, 0)

	p.Unblock()
	c := dial(t, p.Addr())
	send(t, c, "back")
	expect(t, c, "back")
	expectConns(t, p, 1)
}

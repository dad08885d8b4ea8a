package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// prompt bounds how long a test waits for something that should happen
// "at once"; hitting it is a failure, not synchronisation.
const prompt = 5 * time.Second

// quiet is how long a read must stay empty to count as "no bytes arrived".
const quiet = 150 * time.Millisecond

// server is a loopback TCP server for tests. handle runs once per accepted
// connection; Close stops it and waits for every goroutine it started.
type server struct {
	ln     net.Listener
	handle func(net.Conn)
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// startServer starts a server on 127.0.0.1:0 and closes it at cleanup.
func startServer(tb testing.TB, handle func(net.Conn)) *server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	s := &server{ln: ln, handle: handle, conns: make(map[net.Conn]struct{})}
	s.wg.Add(1)
	go s.serve()
	tb.Cleanup(s.Close)
	return s
}

func (s *server) Addr() string { return s.ln.Addr().String() }

func (s *server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.conns == nil { // closed
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				_ = c.Close()
			}()
			s.handle(c)
		}()
	}
}

// Close stops the server, closes its connections and waits for its
// goroutines. Idempotent.
func (s *server) Close() {
	s.once.Do(func() {
		_ = s.ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			_ = c.Close()
		}
		s.conns = nil
		s.mu.Unlock()
	})
	s.wg.Wait()
}

// echo writes greeting, then echoes everything back and half-closes on
// end-of-stream.
func echo(greeting string) func(net.Conn) {
	return func(c net.Conn) {
		if greeting != "" {
			if _, err := io.WriteString(c, greeting); err != nil {
				return
			}
		}
		if _, err := io.Copy(c, c); err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
}

// startEcho starts an echo server that first sends greeting.
func startEcho(tb testing.TB, greeting string) *server {
	tb.Helper()
	return startServer(tb, echo(greeting))
}

// startControlled starts a server that hands each accepted connection to
// the test through the returned channel and keeps it open until the server
// is closed.
func startControlled(tb testing.TB) (*server, <-chan net.Conn) {
	tb.Helper()
	ch := make(chan net.Conn, 16)
	stop := make(chan struct{})
	s := startServer(tb, func(c net.Conn) {
		ch <- c
		<-stop
	})
	// Registered after startServer's cleanup, so it runs first.
	tb.Cleanup(func() { close(stop) })
	return s, ch
}

// accepted waits for the controlled server's next connection.
func accepted(tb testing.TB, ch <-chan net.Conn) net.Conn {
	tb.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(prompt):
		tb.Fatalf("upstream accepted no connection within %v", prompt)
		return nil
	}
}

// newProxy starts a proxy to upstream and closes it at cleanup.
func newProxy(tb testing.TB, upstream string) *Proxy {
	tb.Helper()
	p, err := New(upstream)
	if err != nil {
		tb.Fatalf("New(%q): %v", upstream, err)
	}
	tb.Cleanup(func() {
		if err := p.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return p
}

// dial connects to addr and closes the connection at cleanup.
func dial(tb testing.TB, addr string) net.Conn {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, prompt)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// send writes msg to c.
func send(tb testing.TB, c net.Conn, msg string) {
	tb.Helper()
	_ = c.SetWriteDeadline(time.Now().Add(prompt))
	if _, err := io.WriteString(c, msg); err != nil {
		tb.Fatalf("write %q: %v", msg, err)
	}
}

// expect reads exactly len(want) bytes from c and compares them with want.
func expect(tb testing.TB, c net.Conn, want string) {
	tb.Helper()
	_ = c.SetReadDeadline(time.Now().Add(prompt))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		tb.Fatalf("read %d bytes (want %q): got %q, %v", len(want), want, got, err)
	}
	if string(got) != want {
		tb.Fatalf("read %q, want %q", got, want)
	}
}

// expectNothing asserts that no byte arrives on c for the quiet period.
func expectNothing(tb testing.TB, c net.Conn) {
	tb.Helper()
	_ = c.SetReadDeadline(time.Now().Add(quiet))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if n > 0 {
		tb.Fatalf("read %q while nothing should be forwarded", buf[:n])
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		tb.Fatalf("read returned %v, want a deadline timeout", err)
	}
}

// expectBroken asserts that reading c fails with something other than a
// timeout within the prompt bound (data already in flight is discarded).
func expectBroken(tb testing.TB, c net.Conn) {
	tb.Helper()
	_ = c.SetReadDeadline(time.Now().Add(prompt))
	_, err := io.Copy(io.Discard, c)
	if err == nil {
		return // clean end-of-stream: the connection was closed
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		tb.Fatalf("connection still open after %v", prompt)
	}
}

// expectConns asserts the proxy's live pair count.
func expectConns(tb testing.TB, p *Proxy, want int) {
	tb.Helper()
	if got := p.Conns(); got != want {
		tb.Fatalf("Conns() = %d, want %d", got, want)
	}
}

// pattern returns n deterministic, non-repeating-looking bytes.
func pattern(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		b.WriteByte(byte(i*7 + i/251))
	}
	return b.Bytes()[:n]
}

// expectRefused asserts that a new connection to addr fails promptly, either
// at dial time (the reset can beat connect's completion on loopback) or on
// the first read.
func expectRefused(tb testing.TB, addr string) {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, prompt)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			tb.Fatalf("dial %s timed out, want a prompt failure", addr)
		}
		return
	}
	defer c.Close()
	expectBroken(tb, c)
}

// throughControlled starts a controlled upstream and a proxy to it, and
// returns the proxy with both ends of one connection through it, after
// msg went from the client to the server.
func throughControlled(tb testing.TB, msg string) (p *Proxy, c, s net.Conn, conns <-chan net.Conn) {
	tb.Helper()
	up, conns := startControlled(tb)
	p = newProxy(tb, up.Addr())
	c = dial(tb, p.Addr())
	send(tb, c, msg)
	s = accepted(tb, conns)
	expect(tb, s, msg)
	return p, c, s, conns
}

// throughEcho starts an echo upstream and a proxy to it, and returns the
// proxy with a client connection through it whose msg was echoed.
func throughEcho(tb testing.TB, msg string) (p *Proxy, c net.Conn) {
	tb.Helper()
	up := startEcho(tb, "")
	p = newProxy(tb, up.Addr())
	c = dial(tb, p.Addr())
	send(tb, c, msg)
	expect(tb, c, msg)
	return p, c
}

package faultproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"time"
)

// errSelfDial stands for the dial error when upstream is the proxy itself.
var errSelfDial = errors.New("faultproxy: upstream is the proxy's own address")

// dialTimeout bounds how long a connection waits for upstream to accept.
const dialTimeout = 10 * time.Second

// copyBufSize is the size of each forwarding goroutine's buffer, i.e. the
// most bytes one direction holds while stalled (the rest stays in the
// kernel's socket buffers, applying TCP back-pressure to the sender).
const copyBufSize = 32 << 10

// pair is one client connection and its upstream connection. Its mutable
// fields are guarded by the owning proxy's mu.
type pair struct {
	p      *Proxy
	client net.Conn
	ctx    context.Context    // cancelled when the pair closes; aborts the dial
	cancel context.CancelFunc // cancels ctx

	server   net.Conn // nil until upstream has been dialed
	closed   bool
	finished int // directions that ended with a clean end-of-stream
}

// newPair returns a pair for an accepted client connection.
func newPair(p *Proxy, client net.Conn) *pair {
	ctx, cancel := context.WithCancel(context.Background())
	return &pair{p: p, client: client, ctx: ctx, cancel: cancel}
}

// run waits until the proxy is not stalled, dials upstream and starts the
// two forwarding goroutines. It runs in its own goroutine, counted in p.wg.
func (pr *pair) run() {
	defer pr.p.wg.Done()
	if !pr.waitFlow() {
		return
	}
	pr.p.mu.Lock()
	upstream := pr.p.upstream
	pr.p.mu.Unlock()

	var server net.Conn
	err := errSelfDial
	if upstream != pr.p.addr { // a proxy forwarding to itself would loop forever
		d := net.Dialer{Timeout: dialTimeout}
		server, err = d.DialContext(pr.ctx, "tcp", upstream)
	}

	pr.p.mu.Lock()
	defer pr.p.mu.Unlock()
	if err != nil {
		pr.closeLocked(true)
		return
	}
	if pr.closed { // cut or closed while dialing
		resetClose(server)
		return
	}
	pr.server = server
	pr.p.wg.Add(2) // counter is > 0 here: run itself is counted
	go pr.forward(pr.client, server)
	go pr.forward(server, pr.client)
}

// forward copies src to dst, passing every chunk and the final
// end-of-stream or error through the stall gate first. It runs in its own
// goroutine, counted in p.wg.
func (pr *pair) forward(src, dst net.Conn) {
	defer pr.p.wg.Done()
	buf := make([]byte, copyBufSize)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if !pr.waitFlow() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				pr.close(true)
				return
			}
		}
		if rerr == nil {
			continue
		}
		if !pr.waitFlow() {
			return
		}
		if errors.Is(rerr, io.EOF) {
			pr.finish(dst)
		} else {
			pr.close(true)
		}
		return
	}
}

// finish propagates a clean end-of-stream to dst by half-closing it; once
// both directions have finished the pair is closed gracefully.
func (pr *pair) finish(dst net.Conn) {
	hc, ok := dst.(interface{ CloseWrite() error })
	if !ok || hc.CloseWrite() != nil {
		pr.close(true)
		return
	}
	pr.p.mu.Lock()
	defer pr.p.mu.Unlock()
	pr.finished++
	if pr.finished == 2 {
		pr.closeLocked(false)
	}
}

// waitFlow blocks while the proxy is stalled and the pair is open. It
// reports whether the pair is still open.
func (pr *pair) waitFlow() bool {
	pr.p.mu.Lock()
	defer pr.p.mu.Unlock()
	for pr.p.stalled && !pr.closed {
		pr.p.flow.Wait()
	}
	return !pr.closed
}

// close closes the pair; see closeLocked.
func (pr *pair) close(reset bool) {
	pr.p.mu.Lock()
	defer pr.p.mu.Unlock()
	pr.closeLocked(reset)
}

// closeLocked closes both connections (with RST if reset), aborts a pending
// dial, unregisters the pair and wakes its stalled goroutines. It is
// idempotent. p.mu must be held.
func (pr *pair) closeLocked(reset bool) {
	if pr.closed {
		return
	}
	pr.closed = true
	delete(pr.p.pairs, pr)
	pr.cancel()
	for _, c := range []net.Conn{pr.client, pr.server} {
		if c == nil {
			continue
		}
		if reset {
			resetClose(c)
		} else {
			_ = c.Close()
		}
	}
	pr.p.flow.Broadcast()
}

// resetClose closes c, asking the kernel to send a TCP RST instead of a FIN
// when c is a TCP connection.
func resetClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

package faultproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// listenAddr is where every proxy listens: loopback, kernel-chosen port.
const listenAddr = "127.0.0.1:0"

// acceptRetryDelay is how long the accept loop waits after a transient
// Accept error before trying again.
const acceptRetryDelay = 10 * time.Millisecond

// Proxy forwards TCP connections from a loopback listener to an upstream
// address, and lets a test cut, block or stall them. All methods are safe
// for concurrent use. Create one with New and release it with Close.
type Proxy struct {
	ln   net.Listener
	addr string
	done chan struct{} // closed by the first Close

	mu       sync.Mutex
	flow     *sync.Cond // on mu; broadcast when stalled clears or a pair closes
	upstream string
	blocked  bool
	stalled  bool
	closed   bool
	pairs    map[*pair]struct{}

	wg        sync.WaitGroup // every goroutine the proxy started
	closeOnce sync.Once
}

// New validates upstream ("host:port"), listens on 127.0.0.1 with a
// kernel-chosen port and starts accepting connections in a goroutine before
// returning. It does not contact upstream; each accepted connection dials it
// separately. Errors wrap ErrConfig or ErrListen. Safe for
// concurrent use; blocks only on the listen system call.
func New(upstream string) (*Proxy, error) {
	if err := validateUpstream(upstream); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: address %q: %w", ErrListen, listenAddr, err)
	}
	p := &Proxy{
		ln:       ln,
		addr:     ln.Addr().String(),
		done:     make(chan struct{}),
		upstream: upstream,
		pairs:    make(map[*pair]struct{}),
	}
	p.flow = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// validateUpstream reports whether addr has the "host:port" form with a
// non-empty port.
func validateUpstream(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: upstream %q: %w", ErrConfig, addr, err)
	}
	if port == "" {
		return fmt.Errorf("%w: upstream %q: empty port", ErrConfig, addr)
	}
	return nil
}

// Addr returns the "127.0.0.1:port" address clients should connect to.
// Safe for concurrent use; never blocks.
func (p *Proxy) Addr() string { return p.addr }

// Upstream returns the address new connections are forwarded to.
// Safe for concurrent use; blocks only on the proxy's internal mutex.
func (p *Proxy) Upstream() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.upstream
}

// SetUpstream makes connections accepted from now on dial addr. Existing
// connections keep their current upstream. The address is not validated:
// if it is unusable (or is the proxy's own Addr), new client connections
// are reset when dialing fails.
// Safe for concurrent use; blocks only on the proxy's internal mutex.
func (p *Proxy) SetUpstream(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.upstream = addr
}

// Conns returns the number of live connection pairs: client connections
// that have been accepted and not yet closed, including ones still waiting
// to dial upstream (for example while stalled). Safe for concurrent use;
// blocks only on the proxy's internal mutex.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pairs)
}

// Close stops accepting, closes every connection (with RST) and blocks
// until every goroutine the proxy started has returned. It is idempotent:
// later or concurrent calls also wait for the goroutines and return nil;
// only the first call may return the listener's close error. Safe for
// concurrent use.
func (p *Proxy) Close() error {
	var err error
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		close(p.done)
		if cerr := p.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = fmt.Errorf("faultproxy: close listener %s: %w", p.addr, cerr)
		}
		p.closeAllLocked()
		p.flow.Broadcast()
		p.mu.Unlock()
	})
	p.wg.Wait()
	return err
}

// acceptLoop accepts client connections until the listener is closed.
func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient failure (e.g. too many open files): back off briefly
			// unless the proxy is closing.
			t := time.NewTimer(acceptRetryDelay)
			select {
			case <-p.done:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		p.admit(c)
	}
}

// admit registers an accepted client connection and starts its handler, or
// resets it at once when the proxy is blocked or closed.
func (p *Proxy) admit(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.blocked {
		resetClose(c)
		return
	}
	pr := newPair(p, c)
	p.pairs[pr] = struct{}{}
	p.wg.Add(1) // counter is > 0 here: the accept loop itself is counted
	go pr.run()
}

// closeAllLocked resets every live pair. p.mu must be held.
func (p *Proxy) closeAllLocked() {
	for pr := range p.pairs {
		pr.closeLocked(true)
	}
}

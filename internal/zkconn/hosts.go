package zkconn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// pacedHosts is the session's zk.HostProvider. go-zookeeper v1.0.4's own
// (DNSHostProvider) reports a "retry start" whenever it has offered every
// server since the last successful session, and go-zookeeper then fails
// the requests queued so far and sleeps a second before dialing. With one
// server that is every reconnect: a dropped connection costs a second
// before the first dial, and a connection given up unanswered (see
// cappedConn) another second before the next, so that a session of a few
// seconds expired although its server answered again well within it.
//
// pacedHosts offers the servers in turn (shuffled once, as Java's
// StaticHostProvider does) and reports a retry start only when a round of
// every server failed fast: it began less than a second ago (connections
// refused; the second's pause keeps a down server from being dialed in a
// tight loop), or the connection was lost a session timeout ago or more
// (the session is most likely gone, and the requests waiting for it are
// failed with zk.ErrNoServer instead of waiting on).
type pacedHosts struct {
	timeout func() time.Duration // the session timeout
	now     func() time.Time

	mu         sync.Mutex
	servers    []string
	next       int
	tried      int       // servers offered since roundStart
	roundStart time.Time // when the current round began
	lostAt     time.Time // when the first dial after the last session began; zero while connected
	flush      bool      // the next Next reports a retry start: see failQueued
}

// retryPause is what go-zookeeper sleeps on a retry start.
const retryPause = time.Second

func newPacedHosts(timeout func() time.Duration) *pacedHosts {
	return &pacedHosts{timeout: timeout, now: time.Now}
}

// Init takes the servers as given (host:port): each dial resolves its
// name again, so a server that moves to a new address is found. It fails
// when no server's host name resolves, naming them, as go-zookeeper's own
// provider does.
func (h *pacedHosts) Init(servers []string) error {
	if len(servers) == 0 {
		return fmt.Errorf("%w: Servers: empty", ErrConfig)
	}
	var failed []string
	for _, s := range servers {
		host, _, err := net.SplitHostPort(s)
		if err != nil {
			return fmt.Errorf("%w: Servers: %q: %w", ErrConfig, s, err)
		}
		if net.ParseIP(host) != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err = net.DefaultResolver.LookupHost(ctx, host)
		cancel()
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", s, err))
		}
	}
	if len(failed) == len(servers) {
		return fmt.Errorf("%w: no server's address resolves: %v", ErrDial, failed)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = append([]string(nil), servers...)
	rand.Shuffle(len(h.servers), func(i, j int) { h.servers[i], h.servers[j] = h.servers[j], h.servers[i] })
	return nil
}

// Len returns the number of servers.
func (h *pacedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next returns the server to dial and whether go-zookeeper should first
// fail the queued requests and pause (see pacedHosts).
func (h *pacedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	retry := false
	if h.lostAt.IsZero() {
		h.lostAt = now
	}
	if h.tried == len(h.servers) || h.flush {
		retry = h.flush || now.Sub(h.roundStart) < retryPause || now.Sub(h.lostAt) >= h.timeout()
		h.tried, h.flush = 0, false
	}
	if h.tried == 0 {
		h.roundStart = now
		if retry {
			h.roundStart = now.Add(retryPause)
		}
	}
	s := h.servers[h.next]
	h.next = (h.next + 1) % len(h.servers)
	h.tried++
	return s, retry
}

// failQueued makes the next Next report a retry start, so that
// go-zookeeper fails the requests queued for the next connection
// (zk.ErrNoServer) before it dials: for Session.Interrupt.
func (h *pacedHosts) failQueued() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flush = true
}

// Connected records a session established on the server last offered:
// the next dial, after a loss, begins a new round at once.
func (h *pacedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tried = 0
	h.lostAt = time.Time{}
}

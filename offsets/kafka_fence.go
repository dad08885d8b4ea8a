package offsets

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// A KafkaStore writes its OffsetCommit requests on connections of its
// own to the group's coordinator (commit links, up to commitLinks at once
// for a round of several requests), not on the client's:
//
//   - every write has a deadline, the end of the lease it was taken under
//     (the caller's ctx deadline: see CommitBatch). The link refuses to
//     write a byte past it, and tears itself down at it if the request is
//     still unanswered;
//   - the link's sockets have SO_LINGER 0 from the start, so a close, the
//     tear-down or the exit (or kill) of the process discards whatever the
//     kernel still holds to send: a request abandoned here can never reach
//     the broker later, as one queued behind a cut connection would once
//     the network heals (TCP retransmits a live socket's queue, and a
//     closed socket's queue too unless SO_LINGER is 0).
//
// Kafka cannot fence these commits for us: a ZooKeeper-coordinated group
// commits as a group without members (generation -1), which the
// coordinator accepts from anyone at any time.

// fencedConn is a link's TCP connection: it refuses writes past its
// deadline and can be torn down (RST, send queue discarded) at once.
type fencedConn struct {
	net.Conn
	mu       sync.Mutex
	deadline time.Time // zero: no write allowed (between requests)
	aborted  bool
}

// Write writes p if the deadline has not passed (on the monotonic clock);
// otherwise it tears the connection down and fails.
func (c *fencedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	d, aborted := c.deadline, c.aborted
	c.mu.Unlock()
	if aborted {
		return 0, errLinkAborted
	}
	if d.IsZero() || !time.Now().Before(d) {
		c.abort()
		return 0, fmt.Errorf("%w: not writing after %v", ErrLeaseExpired, d)
	}
	return c.Conn.Write(p)
}

// allow lets writes through until deadline; allow(time.Time{}) forbids
// them again.
func (c *fencedConn) allow(deadline time.Time) {
	c.mu.Lock()
	c.deadline = deadline
	c.mu.Unlock()
}

// abort closes the connection with SO_LINGER 0 (set at dial): the kernel
// discards its send queue and resets the connection. Idempotent.
func (c *fencedConn) abort() {
	c.mu.Lock()
	done := c.aborted
	c.aborted = true
	c.mu.Unlock()
	if !done {
		_ = c.Conn.Close()
	}
}

func (c *fencedConn) isAborted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.aborted
}

// Close closes the connection (with SO_LINGER 0, as every close of it).
func (c *fencedConn) Close() error {
	c.abort()
	return nil
}

// errLinkAborted is the error of a write on a torn-down link.
var errLinkAborted = errors.New("offsets: commit connection torn down")

// dialer is sarama's proxy dialer interface (Config.Net.Proxy.Dialer).
type dialer interface {
	Dial(network, addr string) (net.Conn, error)
}

// lingerDialer dials connections with SO_LINGER 0 and wraps them in a
// fencedConn; last is the connection it dialled last. It dials through
// inner (the client's own Net.Proxy.Dialer, when it has one) or d. It
// implements sarama's proxy dialer interface.
type lingerDialer struct {
	d     net.Dialer
	inner dialer
	mu    sync.Mutex
	last  *fencedConn
}

func (l *lingerDialer) Dial(network, addr string) (net.Conn, error) {
	var c net.Conn
	var err error
	if l.inner != nil {
		c, err = l.inner.Dial(network, addr)
	} else {
		c, err = l.d.Dial(network, addr)
	}
	if err != nil {
		return nil, err
	}
	// A TCP connection (or a dialer's that exposes SetLinger) closes
	// abortively; another kind of connection cannot, and is only fenced
	// by its deadline.
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		if err := tc.SetLinger(0); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("offsets: SO_LINGER 0 on the commit connection to %s: %w", addr, err)
		}
	}
	fc := &fencedConn{Conn: c}
	// The client's handshake (ApiVersions, SASL) writes before any
	// commit: allow it for the dial's own timeout.
	handshake := l.d.Timeout
	if handshake <= 0 {
		handshake = 30 * time.Second
	}
	fc.allow(time.Now().Add(handshake))
	l.mu.Lock()
	l.last = fc
	l.mu.Unlock()
	return fc, nil
}

// commitLink is a store's connection to the coordinator for commits.
// Used by one of the batcher's goroutines at a time (and abort, by Close).
type commitLink struct {
	conf   *sarama.Config // the client's, with the link's dialer
	dialer *lingerDialer
	addr   string
	broker *sarama.Broker
	conn   *fencedConn
	mu     sync.Mutex // guards conn for abort, addr for coordinator
}

func newCommitLink(client sarama.Config) *commitLink {
	conf := client // a copy
	d := &lingerDialer{d: net.Dialer{Timeout: conf.Net.DialTimeout, KeepAlive: conf.Net.KeepAlive, LocalAddr: conf.Net.LocalAddr}}
	if conf.Net.Proxy.Enable && conf.Net.Proxy.Dialer != nil {
		d.inner = conf.Net.Proxy.Dialer // the user's dialer (a SOCKS proxy, a test's fault proxy)
	}
	conf.Net.Proxy.Enable = true
	conf.Net.Proxy.Dialer = d
	return &commitLink{conf: &conf, dialer: d}
}

// to returns a connected broker for the coordinator coord and its
// connection, opening a new one when the coordinator moved or the last
// one broke or was torn down.
func (l *commitLink) to(coord *sarama.Broker) (*sarama.Broker, *fencedConn, error) {
	if l.broker != nil && l.addr == coord.Addr() && !l.conn.isAborted() {
		if ok, _ := l.broker.Connected(); ok {
			return l.broker, l.conn, nil
		}
	}
	l.close()
	b := sarama.NewBroker(coord.Addr())
	if err := b.Open(l.conf); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
		return nil, nil, err
	}
	if ok, err := b.Connected(); !ok { // waits for Open
		_ = b.Close()
		if err == nil {
			err = sarama.ErrNotConnected
		}
		return nil, nil, fmt.Errorf("commit connection to %s: %w", coord.Addr(), err)
	}
	l.dialer.mu.Lock()
	fc := l.dialer.last
	l.dialer.mu.Unlock()
	fc.allow(time.Time{}) // writes only within a request's deadline from now on
	l.mu.Lock()
	l.addr, l.broker, l.conn = coord.Addr(), b, fc
	l.mu.Unlock()
	return b, fc, nil
}

// abort tears the current connection down (Close of the store: a request
// under way fails at once instead of waiting for the broker).
func (l *commitLink) abort() {
	l.mu.Lock()
	c := l.conn
	l.mu.Unlock()
	if c != nil {
		c.abort()
	}
}

// coordinator returns the address the link is connected to ("" when it
// is not, and for a nil link). Safe for concurrent use.
func (l *commitLink) coordinator() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addr
}

// close closes the broker (and so its connection).
func (l *commitLink) close() {
	l.mu.Lock()
	b := l.broker
	l.broker, l.conn, l.addr = nil, nil, ""
	l.mu.Unlock()
	if b != nil {
		_ = b.Close()
	}
}

// send writes req on the link to coord, allowed to write until deadline:
// past it nothing is written, and a request still unanswered then is
// abandoned with its connection torn down. fenced reports that the
// deadline cut the request (it may have reached the coordinator before).
func (l *commitLink) send(coord *sarama.Broker, req *sarama.OffsetCommitRequest, deadline time.Time) (resp *sarama.OffsetCommitResponse, fenced bool, err error) {
	if !time.Now().Before(deadline) {
		return nil, false, fmt.Errorf("%w: the deadline passed before the request was sent", ErrLeaseExpired)
	}
	b, fc, err := l.to(coord)
	if err != nil {
		return nil, false, err
	}
	fc.allow(deadline)
	t := time.AfterFunc(time.Until(deadline), fc.abort)
	resp, err = b.CommitOffset(req)
	fenced = !t.Stop()
	fc.allow(time.Time{})
	if fenced && err != nil {
		err = fmt.Errorf("%w: no answer before the deadline; the connection was torn down: %w", ErrLeaseExpired, err)
	}
	if err != nil {
		l.close()
	}
	return resp, fenced, err
}

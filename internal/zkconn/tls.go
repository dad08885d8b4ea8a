package zkconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// TLSDialer returns a zk.Dialer (for zk.WithDialer) that connects to
// ZooKeeper's secure client port (secureClientPort, served by the Netty
// connection factory) over TLS with cfg. The handshake completes inside
// the dial, bounded by the dial timeout, so that a refused certificate
// fails the dial instead of the first request. cfg is cloned per
// connection; an empty ServerName is taken from the address dialled. A nil
// cfg verifies the server against the system roots.
func TLSDialer(cfg *tls.Config) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c := &tls.Config{}
		if cfg != nil {
			c = cfg.Clone()
		}
		if c.ServerName == "" {
			if host, _, err := net.SplitHostPort(address); err == nil {
				c.ServerName = host
			}
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, c)
		if err != nil {
			return nil, fmt.Errorf("zkconn: TLS to %s: %w", address, err)
		}
		return conn, nil
	}
}

// dialRecorder wraps a dialer and keeps its last error, so that a session
// that never came up can say why (a refused certificate, a closed port)
// instead of only that it timed out: go-zookeeper retries failed dials on
// its own and reports none of them.
type dialRecorder struct {
	dial zk.Dialer
	mu   sync.Mutex
	last error
	// refused is closed on the first certificate that did not verify: no
	// retry can succeed, so Dial stops waiting.
	refused   chan struct{}
	closeOnce sync.Once
}

func newDialRecorder(d zk.Dialer) *dialRecorder {
	return &dialRecorder{dial: d, refused: make(chan struct{})}
}

func (r *dialRecorder) dialer(network, address string, timeout time.Duration) (net.Conn, error) {
	conn, err := r.dial(network, address, timeout)
	r.record(err)
	if err != nil {
		return nil, err
	}
	return &recordedConn{Conn: conn, rec: r}, nil
}

func (r *dialRecorder) record(err error) {
	r.mu.Lock()
	r.last = err
	r.mu.Unlock()
	if certificateRefused(err) {
		r.closeOnce.Do(func() { close(r.refused) })
	}
}

// certificateRefused reports whether err is a server certificate that did
// not verify.
func certificateRefused(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return err != nil && (errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid))
}

// recordedConn records read errors: under TLS 1.3 a server that refuses
// the client's certificate says so only on the first read after the
// handshake.
type recordedConn struct {
	net.Conn
	rec *dialRecorder
}

// Read reads from the connection, recording an error.
func (c *recordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.rec.record(fmt.Errorf("zkconn: reading from %s: %w", c.RemoteAddr(), err))
	}
	return n, err
}

// lastErr returns the error of the last dial (nil after a success).
func (r *dialRecorder) lastErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// ErrDial is wrapped by Dial's error when no session came up and the last
// connection attempt failed; the error names that failure.
var ErrDial = errors.New("zkconn: cannot connect to ZooKeeper")

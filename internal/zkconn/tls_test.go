package zkconn_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// tlsListener serves TLS with the PKI's server certificate and completes
// handshakes (then closes), standing in for ZooKeeper's secure port.
func tlsListener(t *testing.T, p *testcluster.PKI) string {
	t.Helper()
	kp, err := tls.LoadX509KeyPair(p.ServerCert, p.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{kp}})
	if err != nil {
		t.Fatal(err)
	}
	return testcluster.Serve(t, l, func(c net.Conn) {
		_ = c.(*tls.Conn).Handshake()
		c.Close()
	})
}

func TestTLSDialerVerifies(t *testing.T) {
	good, err := testcluster.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := testcluster.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	addr := tlsListener(t, good)
	trusting, _ := good.ClientTLS(false)
	conn, err := zkconn.TLSDialer(trusting)("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial with the right CA: %v", err)
	}
	conn.Close()

	stranger, _ := other.ClientTLS(false)
	_, err = zkconn.TLSDialer(stranger)("tcp", addr, 5*time.Second)
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("dial with another CA: got %v, want an unknown-authority error", err)
	}

	// Dial names the refused certificate instead of only timing out, and
	// gives up at once: no retry can succeed.
	start := time.Now()
	_, err = zkconn.Dial(zkconn.Config{Servers: []string{addr}, SessionTimeout: 30 * time.Second, TLS: stranger})
	if time.Since(start) > 20*time.Second {
		t.Errorf("Dial waited %v for a certificate that cannot verify", time.Since(start))
	}
	if !errors.Is(err, zkconn.ErrDial) || !errors.As(err, &unknown) {
		t.Fatalf("Dial with an untrusted server: got %v, want ErrDial naming the unknown authority", err)
	}
}

func TestTLSDialerServerName(t *testing.T) {
	p, err := testcluster.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	addr := tlsListener(t, p)
	_, port, _ := net.SplitHostPort(addr)
	cfg, _ := p.ClientTLS(false)
	// The certificate names localhost and 127.0.0.1; any other name fails.
	cfg.ServerName = "zk.example"
	if _, err := zkconn.TLSDialer(cfg)("tcp", addr, 5*time.Second); err == nil {
		t.Fatal("a server name the certificate does not hold was accepted")
	}
	cfg.ServerName = "localhost"
	conn, err := zkconn.TLSDialer(cfg)("tcp", net.JoinHostPort("127.0.0.1", port), 5*time.Second)
	if err != nil {
		t.Fatalf("server name localhost: %v", err)
	}
	conn.Close()
}

package metadata

import (
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestOpenUnreachable opens against a port nobody listens on: Open fails
// once no session came up within the session timeout, and leaves no
// goroutine.
func TestOpenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	leaks := goleak.IgnoreCurrent()
	start := time.Now()
	cfg := NewConfig()
	cfg.SessionTimeout = MinSessionTimeout
	w, err := Open(addr+"/kafka", nil, cfg, quietLog())
	if err == nil {
		w.Close()
		t.Fatal("Open succeeded without a server")
	}
	t.Logf("Open failed after %v: %v", time.Since(start), err)
	goleak.VerifyNone(t, leaks)
}

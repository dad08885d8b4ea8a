package ops

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestProbeRefused: every server refusing is reported at once, naming
// each; one server listening is not a refusal.
func TestProbeRefused(t *testing.T) {
	a, b := testcluster.RefusedAddr(t), testcluster.RefusedAddr(t)
	start := time.Now()
	err := ProbeRefused(context.Background(), a+","+b+"/kafka")
	if !errors.Is(err, ErrZooKeeperRefused) || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) {
		t.Fatalf("two closed ports: %v", err)
	}
	if d := time.Since(start); d > probeTimeout {
		t.Errorf("took %v", d)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := ProbeRefused(context.Background(), a+","+l.Addr().String()); err != nil {
		t.Errorf("one server listening: %v", err)
	}
	if err := ProbeRefused(context.Background(), ""); !errors.Is(err, ErrConfig) {
		t.Errorf("empty connect string: %v", err)
	}
}

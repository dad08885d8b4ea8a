package testcluster

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFreePortsNeverRepeat: ports handed out by separate calls are all
// distinct, although each call releases its ports before returning; and
// on Linux none is in the kernel's ephemeral range, where an outgoing
// connection could take it before the server binds it.
func TestFreePortsNeverRepeat(t *testing.T) {
	span, outside := pickSpan("/proc/sys/net/ipv4/ip_local_port_range")
	seen := map[int]bool{}
	for range 300 {
		ports, err := freePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
			if outside && (p < span.lo || p >= span.hi) {
				t.Fatalf("port %d outside %d-%d", p, span.lo, span.hi-1)
			}
		}
	}
}

// TestPickPortsSkipsTaken: a port whose lock another process holds, and a
// port something listens on, are never picked.
func TestPickPortsSkipsTaken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ports.lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	locks, other := open(), open()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port
	// A span of 8 around the listener's port (not handed out before here).
	span := portSpan{busy - 3, busy + 5}
	locked := busy - 2
	// An open file description of its own conflicts with pickPorts's, as
	// another process's would.
	if ok, err := lockByte(other, locked, unix.F_WRLCK); err != nil || !ok {
		t.Fatalf("lock %d: %v %v", locked, ok, err)
	}
	reserved.Lock()
	defer reserved.Unlock()
	if reserved.ports == nil {
		reserved.ports = map[int]bool{}
	}
	// Pick one at a time until the span has none left.
	picked := 0
	for ; picked <= span.hi-span.lo; picked++ {
		got, err := pickPorts(1, span, locks)
		if err != nil {
			break
		}
		if p := got[0]; p == busy || p == locked {
			t.Fatalf("picked port %d (busy %d, locked %d)", p, busy, locked)
		}
	}
	if picked > span.hi-span.lo-2 {
		t.Errorf("picked %d of a span of %d with 2 taken", picked, span.hi-span.lo)
	}
}

// TestPickSpan: ports come from below the ephemeral range, else above.
func TestPickSpan(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		file string
		want portSpan
		ok   bool
	}{
		{"32768\t60999\n", portSpan{10000, 32768}, true},
		{"1024 50000", portSpan{50001, 65536}, true},
		{"1024 65000", portSpan{}, false},
		{"60999 32768", portSpan{}, false},
		{"garbage", portSpan{}, false},
	} {
		path := filepath.Join(dir, "range")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		got, ok := pickSpan(path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q: got %v %v, want %v %v", tc.file, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := pickSpan(filepath.Join(dir, "absent")); ok {
		t.Error("absent file: ok")
	}
}

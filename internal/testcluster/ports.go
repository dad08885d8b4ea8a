package testcluster

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Ports for the test servers come from outside the kernel's ephemeral
// range. A port the kernel hands out for ":0" is free only until the
// listener closes: between that and the server's bind, any outgoing
// connection on the machine (a test's client, another test process) may
// take it as its local port, and the server then fails with "Address
// already in use" (seen in CI: a broker of a per-test cluster). Ports
// below the ephemeral range are never given to outgoing connections.
//
// Two test processes (go test -p 2, a cluster-up) pick from the same
// range, so each port taken is also reserved by an exclusive lock on its
// byte of one shared file (an open-file-description lock, so that one
// process's locks do not fall with another descriptor of the same file),
// held until the process exits: by then the server bound it, and a later
// pick's probe finds it in use.

// reserved is every port freePorts has returned in this process, and the
// lock file whose bytes reserve them across processes (opened once, never
// closed).
var reserved struct {
	sync.Mutex
	ports map[int]bool
	locks *os.File
}

// portSpan is where freePorts picks: [lo, hi).
type portSpan struct{ lo, hi int }

// pickSpan returns the ports below the kernel's ephemeral range (from
// /proc/sys/net/ipv4/ip_local_port_range), or above it when too few are
// below; ok is false when neither has room (or the range is unknown).
func pickSpan(rangeFile string) (portSpan, bool) {
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return portSpan{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return portSpan{}, false
	}
	elo, err1 := strconv.Atoi(f[0])
	ehi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || elo > ehi {
		return portSpan{}, false
	}
	const floor, room = 10000, 2000 // below 10000 live well-known services
	switch {
	case elo-floor >= room:
		return portSpan{floor, elo}, true
	case 65536-(ehi+1) >= room:
		return portSpan{ehi + 1, 65536}, true
	}
	return portSpan{}, false
}

// freePorts returns n distinct free loopback TCP ports that no process
// has reserved and this process has not handed out before. It picks them
// outside the ephemeral range where the kernel says where that is, and
// asks the kernel (":0") otherwise.
func freePorts(n int) ([]int, error) {
	reserved.Lock()
	defer reserved.Unlock()
	if reserved.ports == nil {
		reserved.ports = map[int]bool{}
	}
	span, ok := pickSpan("/proc/sys/net/ipv4/ip_local_port_range")
	if !ok {
		return kernelPorts(n)
	}
	if reserved.locks == nil {
		// One file per user: another user's would not open for writing.
		name := fmt.Sprintf("zkgroup-ports-%d.lock", os.Getuid())
		f, err := os.OpenFile(filepath.Join(os.TempDir(), name), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, fmt.Errorf("testcluster: free port: %w", err)
		}
		reserved.locks = f
	}
	return pickPorts(n, span, reserved.locks)
}

// pickPorts returns n ports of span, each reserved by a lock on its byte
// of locks, starting at a random place. The caller holds reserved.
func pickPorts(n int, span portSpan, locks *os.File) ([]int, error) {
	size := span.hi - span.lo
	start := rand.IntN(size)
	ports := make([]int, 0, n)
	for i := 0; i < size && len(ports) < n; i++ {
		p := span.lo + (start+i)%size
		if reserved.ports[p] {
			continue
		}
		ok, err := lockByte(locks, p, unix.F_WRLCK)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // another process holds it
		}
		if !bindable(p) {
			if _, err := lockByte(locks, p, unix.F_UNLCK); err != nil {
				return nil, err
			}
			continue
		}
		reserved.ports[p] = true
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("testcluster: free port: %d of %d found in %d-%d", len(ports), n, span.lo, span.hi-1)
	}
	return ports, nil
}

// lockByte sets (F_WRLCK) or clears (F_UNLCK) the lock of f's byte at
// offset p without waiting: false when another open file description
// holds it.
func lockByte(f *os.File, p int, typ int16) (bool, error) {
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: int64(p), Len: 1}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES):
		return false, nil
	}
	return false, fmt.Errorf("testcluster: free port %d: lock: %w", p, err)
}

// bindable reports whether a listener can bind 127.0.0.1:p now.
func bindable(p int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// kernelPorts asks the kernel for n ports this process has not handed out
// before (each listener stays open until all are taken, so none is offered
// twice in one call). The caller holds reserved.
func kernelPorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testcluster: free port: %w", err)
		}
		ls = append(ls, l)
		if len(ls) > n+1000 {
			return nil, fmt.Errorf("testcluster: free port: no port not handed out before among %d", len(ls))
		}
		p := l.Addr().(*net.TCPAddr).Port
		if !reserved.ports[p] {
			reserved.ports[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

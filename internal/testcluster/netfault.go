package testcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Real network faults: a process a test starts runs as a system user of
// its own (NetUser), and an iptables chain of the test's own (NetFault),
// jumped from OUTPUT, drops that user's TCP packets to chosen ports
// (ZooKeeper's, the brokers', or both). Unlike a userspace proxy, this
// cuts the path in the kernel: bytes already written to a socket stay in
// its send queue and are retransmitted when the cut heals, as in a real
// partition. Traffic stays on loopback. It needs root and iptables: outside
// CI a test without them is skipped, in CI (CI=true) it fails.
//
// The owner match (-m owner --uid-owner) sees a socket only while a
// process holds it: once the process closed it or died, the kernel keeps
// retransmitting the socket's queued bytes (an orphan) and the owner rule
// no longer matches them, so they would escape the cut at the next
// retransmission, which no real partition allows. A cut therefore also
// pins each of the user's connections to the cut ports by its local port
// (a rule of its own that drops that connection's packets once no process
// holds it), found in /proc/net/tcp while the cut lasts; the pinned rules
// go with the heal.

// NetUser is a system user to run one process as, so that a NetFault can
// cut that process alone.
type NetUser struct {
	Name     string
	UID, GID uint32
}

// SysProcAttr returns the attributes that make exec.Cmd run as u.
func (u NetUser) SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID}}
}

// netUserPool is the number of users zkgtest1..zkgtestN tests share;
// each is held by one test at a time (see AcquireNetUser).
const netUserPool = 24

// netUsers serialises useradd within this process, and holds the lock
// file whose bytes reserve a user across test processes.
var netUsers struct {
	sync.Mutex
	locks *os.File
	held  map[int]bool
}

// needNetFaults fails (CI) or skips tb unless this process can create
// users and change iptables: root, useradd and iptables present, and
// iptables answering.
func needNetFaults(tb testing.TB) {
	tb.Helper()
	var why string
	switch {
	case os.Geteuid() != 0:
		why = "not root"
	default:
		for _, tool := range []string{"iptables", "useradd"} {
			if _, err := exec.LookPath(tool); err != nil {
				why = tool + " not found"
				break
			}
		}
		if why == "" {
			if out, err := exec.Command("iptables", "-w", "5", "-n", "-L", "OUTPUT").CombinedOutput(); err != nil {
				why = fmt.Sprintf("iptables -L OUTPUT: %v: %s", err, strings.TrimSpace(string(out)))
			}
		}
	}
	if why == "" {
		return
	}
	if InCI() {
		tb.Fatalf("network faults need root, iptables and useradd: %s", why)
	}
	tb.Skipf("network faults need root, iptables and useradd: %s (set CI=true to make this a failure)", why)
}

// AcquireNetUser returns a system user (zkgtestN, created with useradd -r
// -M -s /usr/sbin/nologin when missing) that no other test of any test
// process holds until tb ends. Needs root (see NetFault).
func AcquireNetUser(tb testing.TB) NetUser {
	tb.Helper()
	needNetFaults(tb)
	netUsers.Lock()
	defer netUsers.Unlock()
	if netUsers.locks == nil {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "zkgroup-netusers.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			tb.Fatalf("testcluster: net user: %v", err)
		}
		netUsers.locks, netUsers.held = f, map[int]bool{}
	}
	for n := 1; n <= netUserPool; n++ {
		if netUsers.held[n] {
			continue
		}
		ok, err := lockByte(netUsers.locks, n, unix.F_WRLCK)
		if err != nil {
			tb.Fatalf("testcluster: net user: %v", err)
		}
		if !ok {
			continue
		}
		u, err := ensureUser(fmt.Sprintf("zkgtest%d", n))
		if err != nil {
			_, _ = lockByte(netUsers.locks, n, unix.F_UNLCK)
			tb.Fatalf("testcluster: net user: %v", err)
		}
		netUsers.held[n] = true
		tb.Cleanup(func() {
			netUsers.Lock()
			defer netUsers.Unlock()
			delete(netUsers.held, n)
			_, _ = lockByte(netUsers.locks, n, unix.F_UNLCK)
		})
		return u
	}
	tb.Fatalf("testcluster: net user: all %d users zkgtest1..%d are held", netUserPool, netUserPool)
	return NetUser{}
}

// ensureUser looks name up and creates it (a system user, no home, no
// login shell) when missing. useradd fails while another useradd holds
// /etc/passwd's lock: it is tried again for up to 10 s.
func ensureUser(name string) (NetUser, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if u, err := user.Lookup(name); err == nil {
			uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
			gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
			if err := errors.Join(err1, err2); err != nil {
				return NetUser{}, fmt.Errorf("user %s: %w", name, err)
			}
			return NetUser{Name: name, UID: uint32(uid), GID: uint32(gid)}, nil
		}
		out, err := exec.Command("useradd", "-r", "-M", "-s", "/usr/sbin/nologin", name).CombinedOutput()
		if err == nil {
			continue // look it up
		}
		if time.Now().After(deadline) {
			return NetUser{}, fmt.Errorf("useradd %s: %v: %s", name, err, strings.TrimSpace(string(out)))
		}
		time.Sleep(200 * time.Millisecond) // another useradd holds the lock: no event to wait on
	}
}

// NetFault is an iptables chain of one test, jumped from OUTPUT, that
// holds the test's cuts. Its methods are safe for concurrent use.
type NetFault struct {
	tb    testing.TB
	chain string

	mu     sync.Mutex
	cuts   []*cut
	closed bool
}

// cut is one Cut until the next Heal.
type cut struct {
	user   NetUser
	ports  map[int]bool
	pinned map[[2]int]bool // {local port, remote port} with a rule
	stop   chan struct{}
	done   chan struct{}
}

var netFaultSeq struct {
	sync.Mutex
	n int
}

// newChain creates an iptables chain named <prefix><pid>-<n>, unique on
// the machine while this process lives.
func newChain(prefix string) (string, error) {
	netFaultSeq.Lock()
	netFaultSeq.n++
	chain := fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), netFaultSeq.n)
	netFaultSeq.Unlock()
	return chain, iptables("-N", chain)
}

// NewNetFault creates the test's chain (ZKG<pid>-<n>, unique on the
// machine while this process lives) and jumps to it from OUTPUT; both go
// when tb ends, on every path. It fails (CI) or skips tb without root and
// iptables.
func NewNetFault(tb testing.TB) *NetFault {
	tb.Helper()
	needNetFaults(tb)
	chain, err := newChain("ZKG")
	if err != nil {
		tb.Fatal(err)
	}
	f := &NetFault{tb: tb, chain: chain}
	if err := iptables("-I", "OUTPUT", "-j", chain); err != nil {
		_ = iptables("-X", chain)
		tb.Fatal(err)
	}
	tb.Cleanup(f.close)
	return f
}

// Chain returns the chain's name.
func (f *NetFault) Chain() string { return f.chain }

// close heals and removes the chain and its jump.
func (f *NetFault) close() {
	f.Heal()
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	err := errors.Join(iptables("-D", "OUTPUT", "-j", f.chain), iptables("-F", f.chain), iptables("-X", f.chain))
	if err != nil {
		f.tb.Errorf("removing iptables chain %s: %v", f.chain, err)
	}
}

// Cut drops every TCP packet that u's processes send to the given ports
// of 127.0.0.1 (see Cluster.ZooKeeperPorts, Cluster.BrokerPorts), which
// cuts both directions of their connections: nothing u sends arrives, so
// no reply comes. Until Heal, each of u's connections to those ports is
// also pinned by its local port, so that its bytes stay cut after its
// process closed it or died (see the package comment). It does not block.
func (f *NetFault) Cut(u NetUser, ports ...int) {
	f.tb.Helper()
	c := &cut{user: u, ports: map[int]bool{}, pinned: map[[2]int]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	uid := strconv.FormatUint(uint64(u.UID), 10)
	for _, p := range ports {
		c.ports[p] = true
		if err := iptables("-A", f.chain, "-p", "tcp", "-m", "owner", "--uid-owner", uid, "--dport", strconv.Itoa(p), "-j", "DROP"); err != nil {
			f.tb.Fatal(err)
		}
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		f.tb.Fatalf("testcluster: Cut after the test's end")
	}
	f.cuts = append(f.cuts, c)
	f.mu.Unlock()
	if err := f.pin(c); err != nil {
		f.tb.Error(err)
	}
	go func() {
		defer close(c.done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C: // new connections have no event to wait on
				if err := f.pin(c); err != nil {
					f.tb.Log(err)
				}
			}
		}
	}()
}

// pin adds a rule for each connection of c's user to c's ports not pinned
// yet.
func (f *NetFault) pin(c *cut) error {
	socks, err := TCPSockets(c.user)
	if err != nil {
		return err
	}
	for _, s := range socks {
		k := [2]int{s.LocalPort, s.RemotePort}
		if !c.ports[s.RemotePort] || c.pinned[k] || s.State == tcpListen || s.State == tcpTimeWait {
			continue
		}
		select {
		case <-c.stop:
			return nil // healed meanwhile: a rule added now would outlive it
		default:
		}
		// Only packets no process holds (! --socket-exists): the live
		// socket is the uid rule's, and another process's connection
		// that reuses the port after this one is gone is not cut.
		if err := iptables("-A", f.chain, "-p", "tcp", "--sport", strconv.Itoa(s.LocalPort), "--dport", strconv.Itoa(s.RemotePort),
			"-m", "owner", "!", "--socket-exists", "-j", "DROP"); err != nil {
			return err
		}
		c.pinned[k] = true
	}
	return nil
}

// Heal removes every cut of the chain: packets flow again and the
// kernel's retransmissions deliver what was queued. Idempotent.
func (f *NetFault) Heal() {
	f.mu.Lock()
	cuts := f.cuts
	f.cuts = nil
	f.mu.Unlock()
	for _, c := range cuts {
		close(c.stop)
		<-c.done
	}
	if len(cuts) > 0 {
		if err := iptables("-F", f.chain); err != nil {
			f.tb.Error(err)
		}
	}
}

// Rules returns the chain's rules (iptables -S), for logs.
func (f *NetFault) Rules() string {
	out, err := exec.Command("iptables", "-w", "5", "-S", f.chain).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("iptables -S %s: %v: %s", f.chain, err, out)
	}
	return string(out)
}

// iptables runs iptables with -w (waiting for the xtables lock that
// parallel tests share).
func iptables(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("testcluster: iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// TCP states of /proc/net/tcp.
const (
	tcpEstablished = 0x01
	tcpTimeWait    = 0x06
	tcpListen      = 0x0A
)

// TCPSocket is one TCP socket of /proc/net/tcp or /proc/net/tcp6.
type TCPSocket struct {
	LocalPort, RemotePort int
	State                 int
	// SendQueue is the bytes written and not yet acknowledged by the
	// peer (tx_queue): what a cut holds.
	SendQueue int
	UID       uint32
	// Orphan: no process holds the socket any more (inode 0), and the
	// kernel still sends its queued bytes.
	Orphan bool
}

// TCPSockets returns u's TCP sockets, those of closed or dead processes
// (orphans) included: the kernel keeps a socket's uid until it is gone.
func TCPSockets(u NetUser) ([]TCPSocket, error) {
	var out []TCPSocket
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		socks, err := readTCP(file)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && strings.HasSuffix(file, "6") {
				continue
			}
			return nil, err
		}
		for _, s := range socks {
			if s.UID == u.UID {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// QueuedBytes returns the bytes u's sockets to the given remote ports
// hold unacknowledged (sum of their send queues): 0 once a healed cut's
// queued bytes were delivered or discarded.
func QueuedBytes(u NetUser, ports ...int) (int, error) {
	socks, err := TCPSockets(u)
	if err != nil {
		return 0, err
	}
	want := map[int]bool{}
	for _, p := range ports {
		want[p] = true
	}
	n := 0
	for _, s := range socks {
		if want[s.RemotePort] && s.State != tcpListen {
			n += s.SendQueue
		}
	}
	return n, nil
}

// readTCP parses /proc/net/tcp or tcp6:
// sl local rem st tx_queue:rx_queue tr:when retrnsmt uid timeout inode ...
func readTCP(file string) ([]TCPSocket, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []TCPSocket
	sc := bufio.NewScanner(fh)
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		lp, err1 := hexPort(f[1])
		rp, err2 := hexPort(f[2])
		st, err3 := strconv.ParseUint(f[3], 16, 8)
		q, _, _ := strings.Cut(f[4], ":")
		tx, err4 := strconv.ParseUint(q, 16, 32)
		uid, err5 := strconv.ParseUint(f[7], 10, 32)
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
			return nil, fmt.Errorf("testcluster: %s: %q: %w", file, sc.Text(), err)
		}
		out = append(out, TCPSocket{LocalPort: lp, RemotePort: rp, State: int(st), SendQueue: int(tx), UID: uint32(uid), Orphan: f[9] == "0"})
	}
	return out, sc.Err()
}

// hexPort returns the port of "ADDR:PORT" (hex).
func hexPort(s string) (int, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return 0, fmt.Errorf("no port in %q", s)
	}
	p, err := strconv.ParseUint(s[i+1:], 16, 16)
	return int(p), err
}

// ZooKeeperPorts returns ZooKeeper's client ports, every server's (with
// Secure, the secure one too): what a cut from ZooKeeper drops.
func (c *Cluster) ZooKeeperPorts() []int {
	var ports []int
	for _, z := range c.zks {
		ports = append(ports, z.port)
	}
	if c.zkSecurePort != 0 {
		ports = append(ports, c.zkSecurePort)
	}
	return ports
}

// BrokerPorts returns every client listener port of every broker
// (PLAINTEXT, and with Secure SASL_SSL and MTLS): what a cut from the
// brokers drops.
func (c *Cluster) BrokerPorts() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ports []int
	for _, b := range c.brokers {
		for _, p := range []int{b.port, b.saslPort, b.mtlsPort} {
			if p != 0 {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

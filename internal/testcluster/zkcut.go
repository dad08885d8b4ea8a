package testcluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A ZooKeeperCut cuts one server of an ensemble off from the others, in
// the kernel: an iptables chain of its own, jumped from OUTPUT, drops the
// quorum and election traffic between that server and the rest, both
// directions, while its clients stay connected to it. Cut off from the
// quorum, the server gives up its leader (or its followers) within
// syncLimit ticks, closes its client connections and refuses new ones
// until the cut heals; its clients move to another server.
//
// Its packets are told from the other servers' by their group id (every
// server of an ensemble started as root runs with one of its own, see
// ZooKeepers): each packet it sends on a quorum or election connection
// marks that connection (CONNMARK), and every packet of a marked
// connection is dropped, so the replies to it are cut too. New
// connections to its quorum and election ports are dropped outright.
type ZooKeeperCut struct {
	chain  string
	server int

	mu     sync.Mutex
	healed bool
}

// CutZooKeeperServer cuts server n off from the other servers (see
// ZooKeeperCut) and returns at once. The caller must Heal it: the chain
// outlives the process otherwise. Needs root and iptables, and an
// ensemble started as root.
func (c *Cluster) CutZooKeeperServer(n int) (*ZooKeeperCut, error) {
	z, err := c.zkServerN(n)
	if err != nil {
		return nil, err
	}
	if len(c.zks) < 2 || z.proc == nil || z.proc.gid == 0 {
		return nil, fmt.Errorf("testcluster: ZooKeeper server %d has no group id of its own (an ensemble started as root has)", n)
	}
	var peers []string
	for _, o := range c.zks {
		peers = append(peers, strconv.Itoa(o.quorumPort), strconv.Itoa(o.elecPort))
	}
	mark := strconv.FormatUint(uint64(z.proc.gid), 10)
	chain, err := newChain("ZKQ")
	if err != nil {
		return nil, err
	}
	x := &ZooKeeperCut{chain: chain, server: n}
	rules := [][]string{
		// What the server sends to a peer's port or from its own marks
		// the connection...
		{"-p", "tcp", "-m", "owner", "--gid-owner", mark, "-m", "multiport", "--ports", strings.Join(peers, ","),
			"-j", "CONNMARK", "--set-mark", mark},
		// ...new (and existing) connections to its ports go nowhere...
		{"-p", "tcp", "-m", "multiport", "--dports", fmt.Sprintf("%d,%d", z.quorumPort, z.elecPort), "-j", "DROP"},
		// ...and every packet of a marked connection is dropped, the
		// peer's replies included.
		{"-p", "tcp", "-m", "connmark", "--mark", mark, "-j", "DROP"},
	}
	for _, r := range rules {
		if err := iptables(append([]string{"-A", chain}, r...)...); err != nil {
			_ = errors.Join(iptables("-F", chain), iptables("-X", chain))
			return nil, err
		}
	}
	if err := iptables("-I", "OUTPUT", "-j", chain); err != nil {
		_ = errors.Join(iptables("-F", chain), iptables("-X", chain))
		return nil, err
	}
	return x, nil
}

// Server returns the number of the server cut off.
func (x *ZooKeeperCut) Server() int { return x.server }

// Chain returns the iptables chain's name.
func (x *ZooKeeperCut) Chain() string { return x.chain }

// Heal removes the cut (the chain and its jump): the server finds the
// quorum again, resyncs and serves. Idempotent.
func (x *ZooKeeperCut) Heal() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.healed {
		return nil
	}
	x.healed = true
	return errors.Join(iptables("-D", "OUTPUT", "-j", x.chain), iptables("-F", x.chain), iptables("-X", x.chain))
}

// IsolateZooKeeper cuts server n of c's ensemble off from the others for
// a test (see ZooKeeperCut) and heals the cut when tb ends, on every
// path (healing earlier is allowed). Without root and iptables it skips
// tb, or fails it in CI.
func IsolateZooKeeper(tb testing.TB, c *Cluster, n int) *ZooKeeperCut {
	tb.Helper()
	needNetFaults(tb)
	x, err := c.CutZooKeeperServer(n)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := x.Heal(); err != nil {
			tb.Errorf("healing the cut of ZooKeeper server %d: %v", n, err)
		}
	})
	return x
}

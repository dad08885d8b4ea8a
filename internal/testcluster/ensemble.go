package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// zkServer is one ZooKeeper server: the only one, or server id of an
// ensemble.
type zkServer struct {
	id                   int // myid, 1..n
	port                 int // client port
	quorumPort, elecPort int // an ensemble's: followers to the leader, leader election
	proc                 *process
}

func (z *zkServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", z.port) }

// zkGIDBase plus a server's client port is the group id its JVM runs with
// (as root): unique on the machine while the port is reserved (see
// freePorts), far above any group of /etc/group.
const zkGIDBase = 2_000_000

// setupEnsemble writes the configuration of every server of an ensemble
// (zookeeper-N: zoo.cfg naming every server, data/myid).
func (c *Cluster) setupEnsemble() error {
	n := c.opts.ZooKeepers
	ports, err := freePorts(3 * n)
	if err != nil {
		return err
	}
	var members strings.Builder
	for i := 1; i <= n; i++ {
		z := &zkServer{id: i, port: ports[3*i-3], quorumPort: ports[3*i-2], elecPort: ports[3*i-1]}
		c.zks = append(c.zks, z)
		fmt.Fprintf(&members, "server.%d=127.0.0.1:%d:%d\n", i, z.quorumPort, z.elecPort)
	}
	for _, z := range c.zks {
		name := fmt.Sprintf("zookeeper-%d", z.id)
		dir := filepath.Join(c.dir, name)
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			return fmt.Errorf("testcluster: %w", err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", z.id)), 0o644); err != nil {
			return fmt.Errorf("testcluster: %w", err)
		}
		// initLimit and syncLimit in ticks: a follower that hears nothing
		// from the leader for syncLimit ticks (2.5 s at 500 ms) drops it,
		// and its clients, and looks for a leader again.
		cfg := fmt.Sprintf(`tickTime=%d
initLimit=10
syncLimit=5
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
minSessionTimeout=%d
maxSessionTimeout=%d
%s`, c.opts.ZKTickMs, data, z.port, 2*c.opts.ZKTickMs, 20*c.opts.ZKTickMs, members.String())
		if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
			return fmt.Errorf("testcluster: %w", err)
		}
		if err := writeLog4j(dir, filepath.Join(dir, "zookeeper.log")); err != nil {
			return fmt.Errorf("testcluster: %w", err)
		}
		args := append(jvmArgs(c.zkLib, dir, c.opts.ZKHeapMB),
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(dir, "zoo.cfg"))
		z.proc = newProcess(name, dir, c.opts.Detach, nil, args...)
		z.proc.appLog = filepath.Join(dir, "zookeeper.log")
		if os.Geteuid() == 0 {
			z.proc.gid = uint32(zkGIDBase + z.port)
		}
	}
	return nil
}

// ZooKeeperServers returns the number of ZooKeeper servers (1, or the
// ensemble's size).
func (c *Cluster) ZooKeeperServers() int { return len(c.zks) }

// zkServerN returns server n (1-based).
func (c *Cluster) zkServerN(n int) (*zkServer, error) {
	if n < 1 || n > len(c.zks) {
		return nil, fmt.Errorf("testcluster: no ZooKeeper server %d (of %d)", n, len(c.zks))
	}
	return c.zks[n-1], nil
}

// ZooKeeperServerAddr returns "127.0.0.1:port" of server n (1-based), ""
// when there is none.
func (c *Cluster) ZooKeeperServerAddr(n int) string {
	z, err := c.zkServerN(n)
	if err != nil {
		return ""
	}
	return z.addr()
}

// ZooKeeperServerPID returns the pid of server n's JVM, 0 when it is not
// running.
func (c *Cluster) ZooKeeperServerPID(n int) int {
	z, err := c.zkServerN(n)
	if err != nil || z.proc == nil {
		return 0
	}
	return z.proc.pid()
}

// FourLetter sends ZooKeeper's four-letter word cmd ("srvr", "cons",
// "mntr", ...) to addr and returns the answer.
func FourLetter(addr, cmd string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil && len(b) == 0 {
		return "", err
	}
	return string(b), nil
}

// zkMode reads "Mode: x" from a server's srvr answer: "leader",
// "follower", "standalone", or "" when the server does not serve (down,
// or looking for a leader: "This ZooKeeper instance is not currently
// serving requests").
func zkMode(addr string) string {
	out, err := FourLetter(addr, "srvr")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// serving reports whether the server at addr serves clients.
func serving(addr string) bool { return zkMode(addr) != "" }

// ZooKeeperMode returns what server n says it is (srvr): "leader",
// "follower", "standalone", or "" when it does not serve clients (not
// running, or without a quorum).
func (c *Cluster) ZooKeeperMode(n int) string {
	z, err := c.zkServerN(n)
	if err != nil {
		return ""
	}
	return zkMode(z.addr())
}

// ZooKeeperLeader returns the server that leads the ensemble (its srvr
// says "leader"), 0 when none does (an election is under way).
func (c *Cluster) ZooKeeperLeader() int {
	for _, z := range c.zks {
		if zkMode(z.addr()) == "leader" {
			return z.id
		}
	}
	return 0
}

// ZooKeeperServerOf returns the server that holds a client connection of
// session id (its cons lists "sid=0x<id>"), 0 when no serving server
// does (the client is between two servers).
func (c *Cluster) ZooKeeperServerOf(session int64) int { return c.ZooKeeperSessions()[session] }

// ZooKeeperSessions returns, for every session with a client connection
// to a server, that server (from each server's cons). A server that does
// not serve lists none.
func (c *Cluster) ZooKeeperSessions() map[int64]int {
	out := map[int64]int{}
	for _, z := range c.zks {
		s, err := FourLetter(z.addr(), "cons")
		if err != nil {
			continue
		}
		for {
			_, rest, ok := strings.Cut(s, "sid=0x")
			if !ok {
				break
			}
			hex, _, _ := strings.Cut(rest, ",")
			if id, err := strconv.ParseUint(strings.TrimRight(hex, ")\n"), 16, 64); err == nil {
				out[int64(id)] = z.id
			}
			s = rest
		}
	}
	return out
}

// StopZooKeeperServer stops server n (SIGTERM) and waits for its exit.
func (c *Cluster) StopZooKeeperServer(n int) error {
	return c.stopZooKeeperServer(n, syscall.SIGTERM, 20*time.Second)
}

// KillZooKeeperServer kills server n with SIGKILL and waits for its exit.
func (c *Cluster) KillZooKeeperServer(n int) error {
	return c.stopZooKeeperServer(n, syscall.SIGKILL, 0)
}

func (c *Cluster) stopZooKeeperServer(n int, sig syscall.Signal, grace time.Duration) error {
	z, err := c.zkServerN(n)
	if err != nil {
		return err
	}
	return z.proc.stop(sig, grace)
}

// StartZooKeeperServer starts server n again (with its data) and waits
// until it serves clients: in an ensemble, until it follows or leads.
func (c *Cluster) StartZooKeeperServer(ctx context.Context, n int) error {
	z, err := c.zkServerN(n)
	if err != nil {
		return err
	}
	if err := z.proc.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	return c.waitZooKeeperServing(ctx, z)
}

// WaitZooKeeper waits until every running ZooKeeper server serves clients
// (an ensemble: a leader is elected and every running server follows or
// leads).
func (c *Cluster) WaitZooKeeper(ctx context.Context) error {
	var errs []error
	for _, z := range c.zks {
		if z.proc.running() {
			errs = append(errs, c.waitZooKeeperServing(ctx, z))
		}
	}
	return errors.Join(errs...)
}

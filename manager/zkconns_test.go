package manager_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// TestOneZooKeeperConnection: a member opens exactly one ZooKeeper
// connection (counted on this process's sockets, before and after Join,
// and found in the server's own list, the "cons" four-letter word, with
// the member's session), and its metadata comes through it: partitions
// added to its topic are claimed through a watch, the safety resync an
// hour away, and still over that one connection.
func TestOneZooKeeperConnection(t *testing.T) {
	c := testcluster.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic, group := testcluster.Name(t, "t"), testcluster.Name(t, "g")
	createTopic(t, c, topic, 4, 1)
	port := portOf(t, c.ZooKeeperAddr())
	before := zkConns(t, port)
	cons := joinOne(ctx, t, group, topic, c.ZooKeeperConnect(), nil)
	await(t, 60*time.Second, "4 partitions assigned", func() bool { return len(cons.Stats().Assigned) == 4 })
	opened := newConns(before, zkConns(t, port))
	if len(opened) != 1 {
		t.Fatalf("the member opened %d ZooKeeper connections (local ports %v), want 1", len(opened), opened)
	}
	sid := cons.Stats().SessionID
	if line := consLine(t, c.ZooKeeperAddr(), opened[0]); !strings.Contains(line, fmt.Sprintf("sid=0x%x", sid)) {
		t.Fatalf("ZooKeeper's cons for local port %d: %q; want the member's session 0x%x", opened[0], line, sid)
	}
	t.Logf("one connection, local port %d, session 0x%x", opened[0], sid)

	if err := c.AddPartitions(ctx, topic, 6); err != nil {
		t.Fatal(err)
	}
	await(t, 60*time.Second, "the 2 added partitions assigned", func() bool { return len(cons.Stats().Assigned) == 6 })
	if opened := newConns(before, zkConns(t, port)); len(opened) != 1 {
		t.Fatalf("after the partitions were added: %d ZooKeeper connections %v, want 1", len(opened), opened)
	}
}

// TestZooKeeperTLSMetadata: a member on ZooKeeper's secure port discovers
// the brokers and reads and watches the topics over its one TLS session
// (none on the plain port): partitions added are claimed through a watch,
// with the resync and Kafka's metadata poll an hour away.
func TestZooKeeperTLSMetadata(t *testing.T) {
	c := testcluster.SharedSecure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic, group := testcluster.Name(t, "t"), testcluster.Name(t, "g")
	createTopic(t, c, topic, 2, 1)
	tlsCfg, err := c.PKI().ClientTLS(true)
	if err != nil {
		t.Fatal(err)
	}
	plain, secure := portOf(t, c.ZooKeeperAddr()), portOf(t, c.ZooKeeperSecureConnect())
	beforePlain, beforeSecure := zkConns(t, plain), zkConns(t, secure)
	cons := joinOne(ctx, t, group, topic, c.ZooKeeperSecureConnect(), func(cfg *manager.Config) { cfg.ZooKeeperTLS = tlsCfg })
	await(t, 60*time.Second, "2 partitions assigned", func() bool { return len(cons.Stats().Assigned) == 2 })
	if err := c.AddPartitions(ctx, topic, 5); err != nil {
		t.Fatal(err)
	}
	await(t, 60*time.Second, "the 3 added partitions assigned", func() bool { return len(cons.Stats().Assigned) == 5 })
	if n := newConns(beforeSecure, zkConns(t, secure)); len(n) != 1 {
		t.Errorf("%d connections to ZooKeeper's secure port %v, want 1", len(n), n)
	}
	if n := newConns(beforePlain, zkConns(t, plain)); len(n) != 0 {
		t.Errorf("%d connections to ZooKeeper's plain port %v, want none", len(n), n)
	}
}

// joinOne joins a member of group consuming topic, with the metadata
// resync and Kafka's metadata poll an hour away, and closes it at the end.
func joinOne(ctx context.Context, t *testing.T, group, topic, zookeeper string, configure func(*manager.Config)) *manager.Consumer {
	t.Helper()
	sub, err := subscription.Static(topic)
	if err != nil {
		t.Fatal(err)
	}
	cfg := manager.NewConfig()
	cfg.Logger = testLogger(t)
	cfg.MetadataResync = time.Hour
	cfg.MetadataPoll = time.Hour
	if configure != nil {
		configure(cfg)
	}
	cons, err := manager.Join(ctx, group, sub, zookeeper, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cons.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return cons
}

func portOf(t *testing.T, connect string) int {
	t.Helper()
	hostPort, _, _ := strings.Cut(connect, "/")
	_, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// zkConns returns the local ports of this process's established TCP
// connections to port: the sockets among its file descriptors, looked up
// in /proc/self/net/tcp{,6}.
func zkConns(t *testing.T, port int) map[int]bool {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	mine := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(l, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	out := map[int]bool{}
	for _, name := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		data, err := os.ReadFile(name)
		if err != nil {
			continue // no IPv6
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(f) < 10 || f[3] != "01" || !mine[f[9]] { // 01: ESTABLISHED
				continue
			}
			if hexPort(f[2]) == port {
				out[hexPort(f[1])] = true
			}
		}
	}
	return out
}

// hexPort is the port of a /proc/net/tcp address ("0100007F:0885").
func hexPort(addr string) int {
	_, p, _ := strings.Cut(addr, ":")
	n, _ := strconv.ParseInt(p, 16, 32)
	return int(n)
}

// newConns lists the ports in after that are not in before.
func newConns(before, after map[int]bool) []int {
	var out []int
	for p := range after {
		if !before[p] {
			out = append(out, p)
		}
	}
	return out
}

// consLine returns the line of ZooKeeper's "cons" four-letter word (the
// test cluster allows every one) about the client connection from
// 127.0.0.1:localPort, or "".
func consLine(t *testing.T, addr string, localPort int) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("cons")); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("/127.0.0.1:%d[", localPort)
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			return strings.TrimSpace(sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ""
}

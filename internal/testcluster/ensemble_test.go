package testcluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestEnsemble proves the ensemble option: three servers with one leader,
// a broker and a client that name all three, a client's server found by
// its session id, the leader killed and another elected, the killed
// server back as a follower, and a follower cut off from the others
// (iptables) that stops serving, drops its client to another server, and
// serves again once healed.
func TestEnsemble(t *testing.T) {
	c := testcluster.Start(t, testcluster.Brokers(1), testcluster.ZooKeepers(3))
	ctx := context.Background()
	if n := c.ZooKeeperServers(); n != 3 {
		t.Fatalf("ZooKeeperServers() = %d, want 3", n)
	}
	if hosts := strings.Split(strings.TrimSuffix(c.ZooKeeperConnect(), c.Chroot()), ","); len(hosts) != 3 {
		t.Fatalf("ZooKeeperConnect() = %q: want 3 hosts", c.ZooKeeperConnect())
	}
	modes := map[string]int{}
	for n := 1; n <= 3; n++ {
		modes[c.ZooKeeperMode(n)]++
	}
	if modes["leader"] != 1 || modes["follower"] != 2 {
		t.Fatalf("modes %v: want one leader and two followers", modes)
	}
	leader := c.ZooKeeperLeader()

	conn := testcluster.ZooKeeper(t, c)
	ok, _, err := conn.Exists(c.Chroot() + "/brokers/ids/1")
	if err != nil || !ok {
		t.Fatalf("broker 1 not registered: %v %v", ok, err)
	}
	var at int
	testcluster.Await(t, 10*time.Second, 50*time.Millisecond, "the client's session on a server", func() bool {
		at = c.ZooKeeperServerOf(conn.SessionID())
		return at != 0
	})
	t.Logf("leader %d, client session 0x%x on server %d", leader, conn.SessionID(), at)

	start := time.Now()
	if err := c.KillZooKeeperServer(leader); err != nil {
		t.Fatal(err)
	}
	var next int
	took := testcluster.Await(t, 30*time.Second, 50*time.Millisecond, "a new leader", func() bool {
		next = c.ZooKeeperLeader()
		return next != 0
	})
	if next == leader {
		t.Fatalf("server %d leads again while killed", next)
	}
	t.Logf("leader %d killed: server %d leads after %v", leader, next, took)
	if err := c.StartZooKeeperServer(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if m := c.ZooKeeperMode(leader); m != "follower" {
		t.Errorf("restarted server %d: mode %q, want follower", leader, m)
	}
	t.Logf("server %d back as a follower %v after the kill", leader, time.Since(start))

	// Cut the server the client is on, unless it leads: then another follower.
	testcluster.Await(t, 20*time.Second, 50*time.Millisecond, "the client's session on a server", func() bool {
		at = c.ZooKeeperServerOf(conn.SessionID())
		return at != 0
	})
	victim := at
	if victim == next {
		victim = leader // a follower now
	}
	cut := testcluster.IsolateZooKeeper(t, c, victim)
	start = time.Now()
	took = testcluster.Await(t, 30*time.Second, 50*time.Millisecond, "the cut server to stop serving", func() bool {
		return c.ZooKeeperMode(victim) == ""
	})
	t.Logf("server %d cut off (chain %s): stopped serving after %v", victim, cut.Chain(), took)
	if c.ZooKeeperLeader() == 0 {
		t.Errorf("no leader among the two servers left")
	}
	testcluster.Await(t, 20*time.Second, 50*time.Millisecond, "the client on another server", func() bool {
		at = c.ZooKeeperServerOf(conn.SessionID())
		return at != 0 && at != victim
	})
	if _, _, err := conn.Exists("/"); err != nil {
		t.Errorf("client after the cut: %v", err)
	}
	t.Logf("client session 0x%x on server %d %v after the cut", conn.SessionID(), at, time.Since(start))
	// It stays out while the cut lasts.
	var served []string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if m := c.ZooKeeperMode(victim); m != "" {
			served = append(served, m)
		}
	}
	if len(served) > 0 {
		t.Errorf("the cut server %d served during the cut: %v (chain %s)", victim, served, cut.Chain())
	}
	if err := cut.Heal(); err != nil {
		t.Fatal(err)
	}
	took = testcluster.Await(t, 30*time.Second, 50*time.Millisecond, "the healed server to serve again", func() bool {
		return c.ZooKeeperMode(victim) == "follower"
	})
	t.Logf("healed: server %d follows again after %v", victim, took)
}

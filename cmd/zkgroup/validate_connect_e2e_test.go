package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestValidateConnect: validate --connect meets what run meets before it
// joins. Against the cluster it says what it connected to and warns of a
// subscribed topic Kafka does not know (exit 0); against a chroot where
// no broker is registered (a Kafka 4 / KRaft cluster's ZooKeeper) it
// says brokers: is needed (exit 2) and passes once they are given; a
// missing chroot is named; an unreachable ZooKeeper exits 1 at once.
// Offline, validate said "configuration OK" to all of them.
func TestValidateConnect(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	group, topic := groupTopic(t, c, 2, 1)
	validate := func(body string, extra ...string) (stdout, stderr string, code int) {
		t.Helper()
		return run(t, append([]string{"validate", "--connect", "--config", writeFile(t, "c.yaml", body)}, extra...)...)
	}

	t.Run("reachable", func(t *testing.T) {
		stdout, stderr, code := validate(baseConfig(c, group, topic, ""))
		if code != 0 || !strings.Contains(stdout, "ZooKeeper and Kafka accept it") || !strings.Contains(stdout, "registered in ZooKeeper") ||
			!strings.Contains(stdout, "chroot "+c.Chroot()+" exists") || !strings.Contains(stdout, "known to Kafka: "+topic) || strings.Contains(stderr, "warning") {
			t.Errorf("exit %d\n%s%s", code, stdout, stderr)
		}
		stdout, stderr, code = validate(baseConfig(c, group, topic, ""), "--json")
		var out struct {
			Valid      bool
			Checked    string
			Connection preflightResult
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != 0 || !out.Valid || out.Checked != "connect" ||
			len(out.Connection.Brokers) == 0 || !out.Connection.Registered {
			t.Errorf("--json: exit %d, %v\n%s%s", code, err, stdout, stderr)
		}
	})
	t.Run("unknown topic", func(t *testing.T) {
		missing := testcluster.Name(t, "missing")
		stdout, stderr, code := validate(baseConfig(c, group, missing, ""))
		if code != 0 || !strings.Contains(stderr, "warning: the subscription matches no topic") {
			t.Errorf("exit %d\n%s%s", code, stdout, stderr)
		}
	})

	// A chroot with nothing registered, as zkgroup's own chroot beside a
	// KRaft cluster.
	chroot := "/" + testcluster.Name(t, "kraft")
	if _, err := testcluster.ZooKeeper(t, c).Create(chroot, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	kraft := strings.Replace(baseConfig(c, group, topic, ""), c.ZooKeeperConnect(), c.ZooKeeperAddr()+chroot, 1)
	t.Run("no brokers registered", func(t *testing.T) {
		stdout, stderr, code := validate(kraft)
		if code != exitUsage || !strings.Contains(stderr, "no Kafka brokers known") || !strings.Contains(stderr, "KRaft") ||
			!strings.Contains(stderr, "brokers: in the config file") {
			t.Errorf("exit %d (want 2)\n%s%s", code, stdout, stderr)
		}
		stdout, stderr, code = validate(kraft + "brokers: [" + strings.Join(c.Addrs(), ", ") + "]\n")
		if code != 0 || !strings.Contains(stdout, "from brokers:") {
			t.Errorf("with brokers: exit %d\n%s%s", code, stdout, stderr)
		}
	})
	t.Run("missing chroot", func(t *testing.T) {
		missing := strings.Replace(kraft, chroot, chroot+"-none", 1)
		stdout, stderr, code := validate(missing)
		if code != exitUsage || !strings.Contains(stderr, "the chroot "+chroot+"-none does not exist") {
			t.Errorf("exit %d (want 2)\n%s%s", code, stdout, stderr)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		addr := testcluster.RefusedAddr(t)
		start := time.Now()
		stdout, stderr, code := validate(strings.Replace(baseConfig(c, group, topic, ""), c.ZooKeeperAddr(), addr, 1))
		if code != exitFailure || !strings.Contains(stderr, "refused the connection") {
			t.Errorf("exit %d (want 1) after %v\n%s%s", code, time.Since(start), stdout, stderr)
		}
	})
}

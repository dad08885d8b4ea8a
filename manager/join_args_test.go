package manager_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// TestJoinNilContextAndBadChroot: a nil context made Join panic; it, and
// a chroot ZooKeeper would refuse ("..", ".", a control character), are
// refused with ErrConfig naming the argument, before anything connects
// (nothing listens at the address).
func TestJoinNilContextAndBadChroot(t *testing.T) {
	sub, _ := subscription.Static("t")
	var none context.Context
	for _, tc := range []struct {
		name, zk, field string
		ctx             context.Context
	}{
		{"nil context", "127.0.0.1:1/kafka", "ctx", none},
		{"dot-dot chroot", "127.0.0.1:1/a/../kafka", "zookeeper", context.Background()},
		{"dot chroot", "127.0.0.1:1/./kafka", "zookeeper", context.Background()},
		{"NUL in chroot", "127.0.0.1:1/ka\x00fka", "zookeeper", context.Background()},
	} {
		c, err := manager.Join(tc.ctx, "g", sub, tc.zk, nil)
		if err == nil {
			c.Close()
			t.Fatalf("%s: Join accepted it", tc.name)
		}
		if !errors.Is(err, manager.ErrConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want ErrConfig naming %s", tc.name, err, tc.field)
		}
	}
}

// TestJoinKRaftHint: against a chroot where no broker is registered (a
// Kafka 4 / KRaft cluster's ZooKeeper, used by zkgroup alone) Join's error
// says why and to set Config.Brokers.
func TestJoinKRaftHint(t *testing.T) {
	c := testcluster.Shared(t)
	chroot := "/" + testcluster.Name(t, "kraft")
	zc := testcluster.ZooKeeper(t, c)
	if _, err := zc.Create(chroot, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sub, _ := subscription.Static("t")
	cons, err := manager.Join(t.Context(), testcluster.Name(t, "g"), sub, c.ZooKeeperAddr()+chroot, nil)
	if err == nil {
		cons.Close()
		t.Fatal("Join found brokers under an empty chroot")
	}
	if !errors.Is(err, manager.ErrJoin) || !strings.Contains(err.Error(), "nothing registered under "+chroot+"/brokers/ids") ||
		!strings.Contains(err.Error(), "KRaft") || !strings.Contains(err.Error(), "Config.Brokers") {
		t.Errorf("Join = %v, want the KRaft hint naming Config.Brokers", err)
	}
}

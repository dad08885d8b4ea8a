package manager_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/IBM/sarama"
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

// TestJoinUnreachableBrokers: with brokers that none answer (Config.Brokers
// naming a closed port), Join fails before the member registers, and its
// error names the brokers: with the metadata from ZooKeeper (the first
// Kafka request is the leaders' read) and from Kafka (no cluster
// registered under the chroot given; this one panicked, closing a nil
// metadata reader).
func TestJoinUnreachableBrokers(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "t")
	testcluster.MustCreateTopic(t, c, topic, 2, 1)
	sub, _ := subscription.Static(topic)
	cfg := manager.NewConfig()
	cfg.Brokers = []string{"127.0.0.1:1"}
	for _, tc := range []struct{ name, connect, chroot string }{
		{"metadata from ZooKeeper", c.ZooKeeperConnect(), c.Chroot()},
		{"metadata from Kafka", c.ZooKeeperAddr(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := testcluster.Name(t, "g")
			cons, err := manager.Join(t.Context(), group, sub, tc.connect, cfg)
			if err == nil {
				cons.Close()
				t.Fatal("Join succeeded with brokers that none answer")
			}
			if !errors.Is(err, manager.ErrJoin) || !errors.Is(err, sarama.ErrOutOfBrokers) || !strings.Contains(err.Error(), "127.0.0.1:1") {
				t.Errorf("Join = %v, want ErrJoin wrapping sarama.ErrOutOfBrokers, naming 127.0.0.1:1", err)
			}
			ids, _, err := testcluster.ZooKeeper(t, c).Children(tc.chroot + "/consumers/" + group + "/ids")
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				t.Fatal(err)
			}
			if len(ids) > 0 {
				t.Errorf("members registered after a failed Join: %v", ids)
			}
		})
	}
}

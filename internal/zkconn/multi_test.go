package zkconn_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// TestSessionMulti: a transaction under a chroot applies all its ops or
// none, and paths come back without the chroot.
func TestSessionMulti(t *testing.T) {
	c := testcluster.Shared(t)
	chroot := "/zkconn-" + testcluster.Name(t, "m")
	s, err := zkconn.Dial(zkconn.Config{Servers: []string{c.ZooKeeperAddr()}, Chroot: chroot, SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateParents("/m"); err != nil {
		t.Fatal(err)
	}
	res, err := s.Multi(
		&zk.CreateRequest{Path: "/m/a", Data: []byte("1")},
		&zk.CreateRequest{Path: "/m/b", Data: []byte("2")},
	)
	if err != nil || len(res) != 2 || res[0].String != "/m/a" || res[1].String != "/m/b" {
		t.Fatalf("create multi = %+v, %v; want /m/a and /m/b", res, err)
	}
	res, err = s.Multi(
		&zk.SetDataRequest{Path: "/m/a", Data: []byte("3"), Version: 0},
		&zk.SetDataRequest{Path: "/m/b", Data: []byte("4"), Version: 0},
	)
	if err != nil || res[0].Stat == nil || res[0].Stat.Version != 1 || res[1].Stat.Version != 1 {
		t.Fatalf("set multi = %+v, %v; want both at version 1", res, err)
	}
	// A stale version fails the whole transaction.
	res, err = s.Multi(
		&zk.SetDataRequest{Path: "/m/a", Data: []byte("5"), Version: 1},
		&zk.SetDataRequest{Path: "/m/b", Data: []byte("6"), Version: 0},
	)
	if err == nil && (len(res) < 2 || res[1].Error == nil) {
		t.Fatalf("multi with a stale version = %+v, %v; want a failure", res, err)
	}
	if len(res) == 2 && !errors.Is(res[1].Error, zk.ErrBadVersion) {
		t.Errorf("the stale op's error %v, want ErrBadVersion", res[1].Error)
	}
	for p, want := range map[string]string{"/m/a": "3", "/m/b": "4"} {
		if d, _, err := s.Get(p); err != nil || string(d) != want {
			t.Fatalf("%s = %q, %v after a failed multi; want %q", p, d, err, want)
		}
	}
}

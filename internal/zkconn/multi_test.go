package zkconn_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestSessionMulti: a transaction under a chroot applies all its ops or
// none, and paths come back without the chroot.
func TestSessionMulti(t *testing.T) {
	s, _ := chrootedSession(t, "m")
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

// TestSessionLargeNode writes and reads back a node near ZooKeeper's own
// packet limit (jute.maxbuffer, 1 MiB by default): the session's buffers,
// sized to that limit, carry it both ways.
func TestSessionLargeNode(t *testing.T) {
	s, _ := chrootedSession(t, "l")
	if err := s.CreateParents("/big"); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1000*1000)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	if _, err := s.Create("/big/node", data, 0, s.ACL()); err != nil {
		t.Fatalf("create of %d bytes: %v", len(data), err)
	}
	got, _, err := s.Get("/big/node")
	if err != nil {
		t.Fatalf("get of %d bytes: %v", len(data), err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, not the %d written", len(got), len(data))
	}
	if err := s.Delete("/big/node", -1); err != nil {
		t.Fatal(err)
	}
}

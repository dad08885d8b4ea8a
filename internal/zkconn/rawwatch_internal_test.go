package zkconn

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestGetManyW: GetManyW reads nodes in batches as GetMany does and
// watches those there. Their changes and deletions reach the node hooks,
// whoever makes them, and the fired watches leave the session's set; a watch set relative to an older zxid
// fires at once for a node changed since; after a reconnect the watches
// not dropped are set again and fire for what changed while the session
// had no connection; an unwatched node's change reaches nobody.
func TestGetManyW(t *testing.T) {
	c := testcluster.Shared(t)
	p := testcluster.ZooKeeperProxy(t, c)
	chroot := "/zkconn-" + testcluster.Name(t, "rw")
	s, err := Dial(Config{Servers: []string{p.Addr()}, Chroot: chroot, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateParents("/w/x"); err != nil {
		t.Fatal(err)
	}
	const nodes = 600 // three multiRead batches
	var paths []string
	var creates []any
	for i := range nodes {
		paths = append(paths, fmt.Sprintf("/w/%d", i))
		creates = append(creates, &zk.CreateRequest{Path: paths[i], Data: []byte(fmt.Sprint(i)), Acl: zk.WorldACL(zk.PermAll)})
		if len(creates) == 200 {
			if _, err := s.Multi(creates...); err != nil {
				t.Fatal(err)
			}
			creates = creates[:0]
		}
	}
	paths = append(paths, "/w/missing")

	events := make(chan zk.Event, 64)
	for _, q := range paths {
		s.OnNodeEvent(q, func(ev zk.Event) { events <- ev })
	}
	got, err := s.GetManyW(paths)
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		if string(got[i].Data) != fmt.Sprint(i) || got[i].Err != nil || got[i].Stat.Czxid == 0 {
			t.Fatalf("%s: %q, %+v, %v", paths[i], got[i].Data, got[i].Stat, got[i].Err)
		}
	}
	if !errors.Is(got[nodes].Err, zk.ErrNoNode) {
		t.Fatalf("missing node: %v, want ErrNoNode", got[nodes].Err)
	}
	select {
	case ev := <-events:
		t.Fatalf("an event before any change: %v on %s", ev.Type, ev.Path)
	default:
	}

	zc := testcluster.ZooKeeper(t, c) // another session, straight to the server
	defer zc.Close()
	next := eventWaiter(t, events, chroot)
	if _, err := zc.Set(chroot+"/w/1", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeDataChanged, "/w/1")
	if err := zc.Delete(chroot+"/w/300", -1); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeDeleted, "/w/300")
	if w := s.OwnWatches(); w != nodes-2 {
		t.Errorf("%d watches kept after two fired; want %d", w, nodes-2)
	}

	// A watch relative to a zxid before the node's last change fires at
	// once; one relative to the current zxid waits.
	if err := s.setWatches(0, []string{chroot + "/w/5"}); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeDataChanged, "/w/5")

	// Reconnect: what changed while the session had no connection fires
	// once the watches are set again; the unwatched node's deletion and
	// the fired watches' nodes reach nobody.
	s.Unwatch("/w/7")
	p.Block()
	if err := zc.Delete(chroot+"/w/400", -1); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Set(chroot+"/w/500", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	if err := zc.Delete(chroot+"/w/7", -1); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Set(chroot+"/w/1", []byte("again"), -1); err != nil { // its watch fired
		t.Fatal(err)
	}
	p.Unblock()
	seen := map[string]zk.EventType{}
	for len(seen) < 2 {
		select {
		case ev := <-events:
			seen[strings.TrimPrefix(ev.Path, chroot)] = ev.Type
		case <-time.After(30 * time.Second):
			t.Fatalf("after the reconnect: %v; want /w/400 deleted and /w/500 changed", seen)
		}
	}
	if seen["/w/400"] != zk.EventNodeDeleted || seen["/w/500"] != zk.EventNodeDataChanged {
		t.Fatalf("after the reconnect: %v; want /w/400 deleted and /w/500 changed", seen)
	}
	// A read through the session orders after the watches set again: any
	// event they fired has arrived.
	if _, _, err := s.Get("/w/2"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		t.Fatalf("an unexpected event after the reconnect: %v on %s", ev.Type, ev.Path)
	default:
	}
}

// eventWaiter returns a function that waits for the next event of events
// and fails the test unless it is want on the node at q (under chroot).
func eventWaiter(t *testing.T, events <-chan zk.Event, chroot string) func(want zk.EventType, q string) {
	return func(want zk.EventType, q string) {
		t.Helper()
		select {
		case ev := <-events:
			if ev.Type != want || ev.Path != chroot+q {
				t.Fatalf("event %v on %s; want %v on %s%s", ev.Type, ev.Path, want, chroot, q)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no %v event on %s", want, q)
		}
	}
}

// TestGetManyWUnavailable: a session that cannot batch watched reads (no
// multiRead on the server) says so, and keeps no watch.
func TestGetManyWUnavailable(t *testing.T) {
	s, err := Dial(Config{Servers: []string{fakeZooKeeper(t, new(atomic.Int32))}, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.GetManyW([]string{"/n/a"}); !errors.Is(err, ErrNoRawWatches) {
		t.Fatalf("GetManyW: %v, want ErrNoRawWatches", err)
	}
	if f := s.raw.frames(); f != nil {
		t.Fatalf("%d setWatches frames kept; want none", len(f))
	}
	if _, err := s.GetManyW([]string{"/n/a"}); !errors.Is(err, ErrNoRawWatches) {
		t.Fatalf("GetManyW again: %v, want ErrNoRawWatches", err)
	}
}

package zkconn

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestCreateManyW: CreateManyW makes ephemeral nodes (under a chroot, in
// transactions split to fit a small reply cap) with the stats a read
// would give and watches them: another session's change and deletion
// reach the node hooks, and a watch not dropped is set again after a
// reconnect. A transaction with a node that exists makes nothing: that
// create says "node exists", the others of its transaction "rolled
// back", and a parent that is missing says "no node". Before any
// multiRead was answered on the session, it declines (ErrNoRawWatches).
func TestCreateManyW(t *testing.T) {
	c := testcluster.Shared(t)
	p := testcluster.ZooKeeperProxy(t, c)
	chroot := "/zkconn-" + testcluster.Name(t, "cw")
	s, err := Dial(Config{Servers: []string{p.Addr()}, Chroot: chroot, SessionTimeout: 10 * time.Second,
		MaxReply: 16 << 10}) // about 150 creates per transaction
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateParents("/o/x"); err != nil {
		t.Fatal(err)
	}
	const nodes = 400
	var ops []CreateOp
	for i := range nodes {
		ops = append(ops, CreateOp{Path: fmt.Sprintf("/o/%d", i), Data: []byte("owner-" + fmt.Sprint(i)), Flags: zk.FlagEphemeral})
	}
	if _, err := s.CreateManyW(ops); !errors.Is(err, ErrNoRawWatches) {
		t.Fatalf("before any multiRead: %v; want ErrNoRawWatches", err)
	}
	if _, err := s.GetMany([]string{"/o"}); err != nil {
		t.Fatal(err)
	}
	fulls := make([]string, nodes)
	for i, op := range ops {
		fulls[i] = chroot + op.Path
	}
	if parts := splitCreates(fulls, 16<<10); len(parts) < 3 {
		t.Fatalf("%d transactions for %d creates under a 16 KiB cap; want at least 3", len(parts), nodes)
	}

	events := make(chan zk.Event, 64)
	for _, op := range ops {
		s.OnNodeEvent(op.Path, func(ev zk.Event) { events <- ev })
	}
	got, err := s.CreateManyW(ops)
	if err != nil {
		t.Fatal(err)
	}
	id := s.Status().SessionID
	for i, op := range ops {
		data, st, err := s.Get(op.Path)
		if err != nil || got[i].Err != nil {
			t.Fatalf("%s: read %v, created %v", op.Path, err, got[i].Err)
		}
		if string(got[i].Data) != string(data) || got[i].Stat != *st || st.EphemeralOwner != id {
			t.Fatalf("%s: created %q %+v; read %q %+v (session 0x%x)", op.Path, got[i].Data, got[i].Stat, data, *st, id)
		}
	}
	if w := s.OwnWatches(); w != nodes {
		t.Fatalf("%d watches kept; want %d", w, nodes)
	}

	zc := testcluster.ZooKeeper(t, c)
	defer zc.Close()
	next := eventWaiter(t, events, chroot)
	if _, err := zc.Set(chroot+"/o/1", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeDataChanged, "/o/1")
	if err := zc.Delete(chroot+"/o/300", -1); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeDeleted, "/o/300")

	// Set again after a reconnect: a deletion while the session had no
	// connection fires once it is back.
	p.Block()
	if err := zc.Delete(chroot+"/o/200", -1); err != nil {
		t.Fatal(err)
	}
	p.Unblock()
	next(zk.EventNodeDeleted, "/o/200")

	// One node there: its transaction makes nothing.
	fail := []CreateOp{
		{Path: "/o/new-1", Flags: zk.FlagEphemeral},
		{Path: "/o/5", Flags: zk.FlagEphemeral},
		{Path: "/o/new-2", Flags: zk.FlagEphemeral},
		{Path: "/missing/x", Flags: zk.FlagEphemeral},
	}
	got, err = s.CreateManyW(fail)
	if err != nil {
		t.Fatal(err)
	}
	want := []error{ErrRolledBack, zk.ErrNodeExists, ErrRolledBack, ErrRolledBack}
	for i, w := range want {
		if !errors.Is(got[i].Err, w) {
			t.Errorf("%s: %v; want %v", fail[i].Path, got[i].Err, w)
		}
	}
	if ok, _, _ := s.Exists("/o/new-1"); ok {
		t.Error("/o/new-1 made by a transaction that failed")
	}
	got, err = s.CreateManyW(fail[3:])
	if err != nil || !errors.Is(got[0].Err, zk.ErrNoNode) {
		t.Errorf("under a missing parent: %v, %v; want no node", got[0].Err, err)
	}
	if w := s.OwnWatches(); w != nodes-3 { // /o/1, /o/300 and /o/200 fired
		t.Errorf("%d watches kept; want %d", w, nodes-3)
	}
}

// TestCreateManyWUnavailable: a session on a server without multiRead
// never sends CreateManyW's transaction.
func TestCreateManyWUnavailable(t *testing.T) {
	s, err := Dial(Config{Servers: []string{fakeZooKeeper(t, new(atomic.Int32))}, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _ = s.GetMany([]string{"/a", "/b"}) // answered "unimplemented"
	if _, err := s.CreateManyW([]CreateOp{{Path: "/a"}}); !errors.Is(err, ErrNoRawWatches) {
		t.Fatalf("%v; want ErrNoRawWatches", err)
	}
}

// TestDecodeCreates: a reply of a failed transaction, and malformed ones.
func TestDecodeCreates(t *testing.T) {
	head := func(code int32) []byte {
		b := make([]byte, 16)
		b[12], b[13], b[14], b[15] = byte(uint32(code)>>24), byte(uint32(code)>>16), byte(uint32(code)>>8), byte(uint32(code))
		return b
	}
	errResult := func(b []byte, code int32) []byte {
		b = appendMultiHeader(b, -1, false, code)
		return append(b, byte(uint32(code)>>24), byte(uint32(code)>>16), byte(uint32(code)>>8), byte(uint32(code)))
	}
	b := errResult(head(0), 0)
	b = errResult(b, -110)
	b = errResult(b, -2)
	b = appendMultiHeader(b, -1, true, -1)
	out := make([]NodeData, 3)
	failed, err := decodeCreates(b, out)
	if err != nil || !failed {
		t.Fatalf("failed %v, %v", failed, err)
	}
	for i, w := range []error{ErrRolledBack, zk.ErrNodeExists, ErrRolledBack} {
		if !errors.Is(out[i].Err, w) {
			t.Errorf("op %d: %v; want %v", i, out[i].Err, w)
		}
	}
	if _, err := decodeCreates(b[:len(b)-3], out); err == nil {
		t.Error("a truncated reply decoded")
	}
	if _, err := decodeCreates(b, make([]NodeData, 2)); err == nil {
		t.Error("three results for two creates decoded")
	}
	if _, err := decodeCreates(head(-4), out); err == nil {
		t.Error("a reply with an error and no results decoded")
	}
}

// TestWatchedParts: when a request of CreateManyW fails, the watches of
// the transactions that made their nodes are the ones dropped, not those
// of a failed transaction or a failed request.
func TestWatchedParts(t *testing.T) {
	parts := []span{{0, 2}, {2, 4}, {4, 6}}
	out := []NodeData{{}, {}, {Err: zk.ErrNodeExists}, {Err: ErrRolledBack}, {}, {}}
	errs := []error{nil, nil, errors.New("connection lost")}
	got := watchedParts(parts, errs, out)
	if len(got) != 1 || got[0] != (span{0, 2}) {
		t.Fatalf("watched parts %v; want [{0 2}]", got)
	}
}

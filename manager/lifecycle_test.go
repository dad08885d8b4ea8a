package manager_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
	"go.uber.org/goleak"
)

// TestCloseLeavesNothing: after Close every goroutine Join started has
// ended, the member's ids node and owner nodes are gone, Each ends, Poll
// returns ErrClosed, Errors() is closed, and a second Close returns at
// once.
func TestCloseLeavesNothing(t *testing.T) {
	c := testcluster.Shared(t)
	topic, group, sub := newTopicRF(t, c, 4, 1)
	testcluster.MustProduce(t, c, topic, 4, 0, 100)
	ignore := goleak.IgnoreCurrent()
	zc := testcluster.ZooKeeper(t, c)
	cfg := manager.NewConfig()
	cfg.Logger = testLogger(t)
	cons := mustJoin(t, c, group, sub, cfg)
	await(t, 30*time.Second, "ready", func() bool { s := cons.Stats(); return s.Ready && len(s.Partitions) == 4 })
	got := 0
	for got < 100 {
		m := mustNext(t, cons.Each, 30*time.Second)
		cons.Ack(m)
		got++
	}
	// Every ZooKeeper write takes the next zxid: two writes of a scratch
	// node around Close count the transactions Close made (nothing else in
	// this test binary runs meanwhile).
	mark := c.Chroot() + "/" + testcluster.Name(t, "zxid")
	if _, err := zc.Create(mark, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	zxid := func() int64 {
		st, err := zc.Set(mark, nil, -1)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mzxid
	}
	before := zxid()
	if err := cons.Close(); err != nil {
		t.Fatal(err)
	}
	// The claims and the registration go with the session, in the one
	// transaction that closes it; the metadata reader's session close is
	// the other. Deleting them one by one would take 4 + 1 more.
	if n := zxid() - before - 1; n > 2 {
		t.Errorf("Close made %d ZooKeeper transactions; want 2 (the two session closes)", n)
	}
	zc.Close() // the test's own session, before the goroutine check
	start := time.Now()
	if err := cons.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("second Close took %v", d)
	}
	if m, err := next(cons.Each, 10*time.Second); !errors.Is(err, errEnded) {
		t.Errorf("Each after Close: %v, %v; want the loop to end by itself", m, err)
	}
	if b, err := cons.Poll(t.Context()); !errors.Is(err, manager.ErrClosed) {
		t.Errorf("Poll after Close: %v, %v; want ErrClosed", b, err)
	}
	if _, ok := <-cons.Errors(); ok {
		t.Error("Errors() not closed after Close")
	}
	goleak.VerifyNone(t, ignore,
		// sarama's metrics library starts one global ticker, once per process.
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"))

	zc = testcluster.ZooKeeper(t, c)
	ids, _, err := zc.Children(c.Chroot() + zkdata.IDsPath(group))
	if err != nil || len(ids) != 0 {
		t.Errorf("ids after Close: %v, %v; want none", ids, err)
	}
	owners, _, err := zc.Children(c.Chroot() + zkdata.OwnerTopicPath(group, topic))
	if err != nil || len(owners) != 0 {
		t.Errorf("owner nodes after Close: %v, %v; want none", owners, err)
	}
}

// TestJoinRefusesBadInput: bad arguments are refused with an error naming
// the field before anything is written to ZooKeeper.
func TestJoinRefusesBadInput(t *testing.T) {
	c := testcluster.Shared(t)
	sub, _ := subscription.Static("x")
	group := testcluster.Name(t, "g")
	for _, tc := range []struct {
		name, group, zk string
		sub             *subscription.Subscription
		mod             func(*manager.Config)
		field           string
	}{
		{name: "empty group", group: "", zk: c.ZooKeeperConnect(), sub: sub, field: "group"},
		{name: "group with slash", group: "a/b", zk: c.ZooKeeperConnect(), sub: sub, field: "group"},
		{name: "bad connect string", group: group, zk: "127.0.0.1:99999", sub: sub, field: "zookeeper"},
		{name: "nil subscription", group: group, zk: c.ZooKeeperConnect(), field: "subscription"},
		{name: "short session", group: group, zk: c.ZooKeeperConnect(), sub: sub, field: "SessionTimeout",
			mod: func(cfg *manager.Config) { cfg.SessionTimeout = 2 * time.Second }},
		{name: "no strategy", group: group, zk: c.ZooKeeperConnect(), sub: sub, field: "Strategy",
			mod: func(cfg *manager.Config) { cfg.Strategy = nil }},
		{name: "bad mode", group: group, zk: c.ZooKeeperConnect(), sub: sub, field: "Mode",
			mod: func(cfg *manager.Config) { cfg.Mode = "both" }},
		{name: "bad storage", group: group, zk: c.ZooKeeperConnect(), sub: sub, field: "OffsetStorage",
			mod: func(cfg *manager.Config) { cfg.OffsetStorage = "disk" }},
		{name: "bad initial", group: group, zk: c.ZooKeeperConnect(), sub: sub, field: "Initial",
			mod: func(cfg *manager.Config) { cfg.Partition.Initial = "middle" }},
		{name: "bad max unacked", group: group, zk: c.ZooKeeperConnect(), sub: sub, field: "MaxUnacked",
			mod: func(cfg *manager.Config) { cfg.Partition.MaxUnacked = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := manager.NewConfig()
			if tc.mod != nil {
				tc.mod(cfg)
			}
			cons, err := manager.Join(context.Background(), tc.group, tc.sub, tc.zk, cfg)
			if err == nil {
				cons.Close()
				t.Fatal("Join accepted it")
			}
			if !errors.Is(err, manager.ErrConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not wrap ErrConfig or name %q", err, tc.field)
			}
		})
	}
	zc := testcluster.ZooKeeper(t, c)
	if ok, _, _ := zc.Exists(c.Chroot() + zkdata.ConsumersPath(group)); ok {
		t.Errorf("%s was written by a refused Join", zkdata.ConsumersPath(group))
	}
}

// TestJoinCancelled: a Join whose ZooKeeper never answers (a listener that
// accepts and stays silent) returns the context's error as soon as its
// context ends, well before the session timeout, and leaves no goroutine.
func TestJoinCancelled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, conn) // never answered
		}
	}()
	ignore := goleak.IgnoreCurrent()
	sub, _ := subscription.Static("t")
	cfg := manager.NewConfig()
	cfg.SessionTimeout = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := manager.Join(ctx, "g", sub, ln.Addr().String()+"/kafka", cfg)
	took := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("Join succeeded against a silent ZooKeeper")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, manager.ErrJoin) {
		t.Errorf("Join error %v; want ErrJoin wrapping context.DeadlineExceeded", err)
	}
	if took > 5*time.Second {
		t.Errorf("Join returned after %v, not when its context ended (300ms)", took)
	}
	ln.Close()
	<-accepted
	for _, conn := range held {
		conn.Close()
	}
	// What Join set up is closed in the background: go-zookeeper's Close
	// waits up to a second for a server that never answers.
	testcluster.Poll(10*time.Second, 50*time.Millisecond, func() bool { return goleak.Find(ignore, leakOpts) == nil })
	goleak.VerifyNone(t, ignore, leakOpts)
}

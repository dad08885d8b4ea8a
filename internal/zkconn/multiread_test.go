package zkconn_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// TestGetMany: GetMany returns, in order, what Get returns for each of
// 600 nodes (three batches, under a chroot, over plain TCP and TLS, and
// with a reply cap under a batch's reply, which reads them one by one):
// their data (empty too) and stats, "no node" for paths that do not
// exist and "not authorised" for a node the session may not read, while
// go-zookeeper's own requests go on beside it on the same connection and
// get their own replies.
func TestGetMany(t *testing.T) {
	for _, mode := range []string{"plain", "tls", "capped"} {
		t.Run(mode, func(t *testing.T) {
			c := testcluster.Shared(t)
			chroot := "/zkconn-" + testcluster.Name(t, "many")
			cfg := zkconn.Config{Servers: []string{c.ZooKeeperAddr()}, Chroot: chroot, SessionTimeout: 10 * time.Second}
			switch mode {
			case "capped": // a batch of 256 of these nodes replies about 24 KiB
				cfg.MaxReply = 16 << 10
			case "tls":
				c = testcluster.SharedSecure(t)
				tlsCfg, err := c.PKI().ClientTLS(true)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Servers = []string{strings.TrimSuffix(c.ZooKeeperSecureConnect(), c.Chroot())}
				cfg.TLS = tlsCfg
			}
			s := dialTest(t, cfg)
			const nodes = 600
			paths := createNumbered(t, s, "/n", nodes, func(i int, p string) []any {
				if i%7 == 3 {
					return nil // never created
				}
				data := []byte(strings.Repeat(fmt.Sprint(i), i%5))
				return []any{&zk.CreateRequest{Path: p, Data: data, Acl: zk.WorldACL(zk.PermAll)}}
			})
			secret := "/n/secret"
			if _, err := s.Create(secret, []byte("x"), 0, zk.WorldACL(zk.PermWrite)); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, secret)

			// go-zookeeper's requests beside GetMany's, until it is done.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var side int
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					d, _, err := s.Get("/n/1")
					if err != nil || string(d) != "1" {
						t.Errorf("Get beside GetMany: %q, %v", d, err)
						return
					}
					side++
				}
			})
			var got []zkconn.NodeData
			for range 5 {
				var err error
				if got, err = s.GetMany(paths); err != nil {
					t.Fatal(err)
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("%d Gets went beside 5 GetMany calls", side)
			if len(got) != len(paths) {
				t.Fatalf("%d results for %d paths", len(got), len(paths))
			}
			for i, p := range paths {
				d, st, err := s.Get(p)
				g := got[i]
				switch {
				case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNoAuth):
					if !errors.Is(g.Err, err) {
						t.Errorf("%s: GetMany error %v; Get says %v", p, g.Err, err)
					}
				case err != nil:
					t.Fatal(err)
				case g.Err != nil:
					t.Errorf("%s: GetMany error %v; Get read it", p, g.Err)
				case !bytes.Equal(g.Data, d) || g.Stat != *st:
					t.Errorf("%s: GetMany %q %+v; Get %q %+v", p, g.Data, g.Stat, d, *st)
				}
			}
			if n := count(got, zk.ErrNoNode); n != nodes/7+1 {
				t.Errorf("%d paths without a node; want %d", n, nodes/7+1)
			}
			if !errors.Is(got[len(got)-1].Err, zk.ErrNoAuth) {
				t.Errorf("the unreadable node: %v; want zk.ErrNoAuth", got[len(got)-1].Err)
			}
			// One batch (read in the caller's goroutine) and none.
			one, err := s.GetMany(paths[:10])
			if err != nil || len(one) != 10 {
				t.Fatalf("GetMany of 10 paths: %d results, %v", len(one), err)
			}
			for i, g := range one {
				if !errors.Is(g.Err, got[i].Err) || !bytes.Equal(g.Data, got[i].Data) || g.Stat != got[i].Stat {
					t.Errorf("%s alone: %q %+v %v; in the batches %q %+v %v", paths[i], g.Data, g.Stat, g.Err, got[i].Data, got[i].Stat, got[i].Err)
				}
			}
			if none, err := s.GetMany(nil); err != nil || len(none) != 0 {
				t.Errorf("GetMany of no path: %d results, %v", len(none), err)
			}
		})
	}
}

func count(got []zkconn.NodeData, err error) int {
	n := 0
	for _, g := range got {
		if errors.Is(g.Err, err) {
			n++
		}
	}
	return n
}

// TestChildrenMany: ChildrenMany returns, in order, what Children returns
// for 300 parents (two batches, under a chroot; plain and with a reply cap
// under a batch's reply, which lists them one by one): their children
// (none too), and "no node" for parents that do not exist.
func TestChildrenMany(t *testing.T) {
	for _, mode := range []string{"plain", "capped"} {
		t.Run(mode, func(t *testing.T) {
			c := testcluster.Shared(t)
			chroot := "/zkconn-" + testcluster.Name(t, "kids")
			cfg := zkconn.Config{Servers: []string{c.ZooKeeperAddr()}, Chroot: chroot, SessionTimeout: 10 * time.Second}
			if mode == "capped" { // a batch of 256 of these lists replies about 40 KiB
				cfg.MaxReply = 16 << 10
			}
			s := dialTest(t, cfg)
			const parents = 300
			paths := createNumbered(t, s, "/t", parents, func(i int, p string) []any {
				if i%11 == 5 {
					return nil // never created
				}
				creates := []any{&zk.CreateRequest{Path: p, Acl: zk.WorldACL(zk.PermAll)}}
				for k := range i % 13 {
					creates = append(creates, &zk.CreateRequest{Path: fmt.Sprintf("%s/child-%04d", p, k), Acl: zk.WorldACL(zk.PermAll)})
				}
				return creates
			})
			got, err := s.ChildrenMany(paths)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(paths) {
				t.Fatalf("%d results for %d paths", len(got), len(paths))
			}
			total := 0
			for i, p := range paths {
				kids, _, err := s.Children(p)
				g := got[i]
				switch {
				case errors.Is(err, zk.ErrNoNode):
					if !errors.Is(g.Err, err) {
						t.Errorf("%s: ChildrenMany error %v; Children says %v", p, g.Err, err)
					}
				case err != nil:
					t.Fatal(err)
				case g.Err != nil:
					t.Errorf("%s: ChildrenMany error %v; Children listed it", p, g.Err)
				default:
					slices.Sort(kids)
					gk := slices.Sorted(slices.Values(g.Children))
					if !slices.Equal(gk, kids) {
						t.Errorf("%s: ChildrenMany %q; Children %q", p, gk, kids)
					}
					total += len(kids)
				}
			}
			if n := count(got, zk.ErrNoNode); n != (parents+5)/11 {
				t.Errorf("%d paths without a node; want %d", n, (parents+5)/11)
			}
			if total == 0 {
				t.Error("no children listed at all")
			}
		})
	}
}

// dialTest dials a session with cfg, closed at the end of the test.
func dialTest(t *testing.T, cfg zkconn.Config) *zkconn.Session {
	t.Helper()
	s, err := zkconn.Dial(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// createNumbered creates parent and returns the paths parent/0 to
// parent/n-1, having created what create(i, path) asks for each (nothing
// for a node that is never created), in Multi requests of about 100.
func createNumbered(t *testing.T, s *zkconn.Session, parent string, n int, create func(i int, path string) []any) []string {
	t.Helper()
	if err := s.CreateParents(parent + "/x"); err != nil {
		t.Fatal(err)
	}
	var (
		paths   []string
		creates []any
	)
	for i := range n {
		p := fmt.Sprintf("%s/%d", parent, i)
		paths = append(paths, p)
		creates = append(creates, create(i, p)...)
		if len(creates) >= 100 || i == n-1 {
			if _, err := s.Multi(creates...); err != nil {
				t.Fatal(err)
			}
			creates = creates[:0]
		}
	}
	return paths
}

// TestChildrenStats: ChildrenStats returns, in order, each parent's
// children with the stat Children returns for it (the same Cversion and
// Pzxid), and "no node" for a parent that does not exist.
func TestChildrenStats(t *testing.T) {
	c := testcluster.Shared(t)
	chroot := "/zkconn-" + testcluster.Name(t, "kidstats")
	s := dialTest(t, zkconn.Config{Servers: []string{c.ZooKeeperAddr()}, Chroot: chroot, SessionTimeout: 10 * time.Second})
	paths := []string{"/a", "/b", "/none", "/c"}
	for i, p := range []string{"/a", "/b", "/c"} {
		for k := range i * 2 {
			if err := s.CreateParents(fmt.Sprintf("%s/%d", p, k)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateParents(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete("/c/0", -1); err != nil { // Cversion 5, three children
		t.Fatal(err)
	}
	got, err := s.ChildrenStats(paths)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		kids, st, err := s.Children(p)
		g := got[i]
		switch {
		case errors.Is(err, zk.ErrNoNode):
			if !errors.Is(g.Err, err) {
				t.Errorf("%s: ChildrenStats error %v; Children says %v", p, g.Err, err)
			}
		case err != nil:
			t.Fatal(err)
		case g.Err != nil:
			t.Errorf("%s: ChildrenStats error %v; Children listed it", p, g.Err)
		default:
			slices.Sort(kids)
			if gk := slices.Sorted(slices.Values(g.Children)); !slices.Equal(gk, kids) {
				t.Errorf("%s: ChildrenStats %q; Children %q", p, gk, kids)
			}
			if g.Stat != *st {
				t.Errorf("%s: ChildrenStats stat %+v; Children %+v", p, g.Stat, *st)
			}
		}
	}
	if got[3].Stat.Cversion != 5 || len(got[3].Children) != 3 {
		t.Errorf("/c: Cversion %d and %d children, want 5 and 3", got[3].Stat.Cversion, len(got[3].Children))
	}
}

package zkconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/logcheck"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// recorded keeps the records logged through it.
type recorded struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorded) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorded) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *recorded) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorded) WithGroup(string) slog.Handler      { return r }

// versionWarnings returns the text of each Warn record about the
// go-zookeeper version, with its attributes.
func (r *recorded) versionWarnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		if rec.Level != slog.LevelWarn || !strings.Contains(rec.Message, "go-zookeeper") {
			continue
		}
		line := rec.Message
		rec.Attrs(func(a slog.Attr) bool {
			line += " " + a.String()
			return true
		})
		out = append(out, line)
	}
	return out
}

// modeSession dials the shared cluster under chroot, as built with a
// go-zookeeper of version (the tested one: the shims are on).
func modeSession(t *testing.T, chroot, version string) (*Session, *recorded) {
	t.Helper()
	c := testcluster.Shared(t)
	rec := &recorded{}
	s, err := Dial(Config{Servers: []string{c.ZooKeeperAddr()}, Chroot: chroot, SessionTimeout: 10 * time.Second,
		Logger:      slog.New(logcheck.Check(t, rec)),
		goZooKeeper: []*debug.Module{{Path: goZooKeeperModule, Version: version}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, rec
}

// TestPlainModeSelected: a session on the tested go-zookeeper runs
// through the shims and logs nothing about the version; one on another
// version dials go-zookeeper's connection as it is (no gate, no side
// connection), says so once at Warn with both versions and what is off,
// and not again while it works.
func TestPlainModeSelected(t *testing.T) {
	chroot := "/zkconn-" + testcluster.Name(t, "plainmode")
	shim, shimLog := modeSession(t, chroot, TestedGoZooKeeper)
	plain, plainLog := modeSession(t, chroot, "v1.0.5")

	if shim.plain {
		t.Error("the tested version runs plain")
	}
	if c := shim.lines.latest.Load(); c == nil {
		t.Error("shim mode: no connection recorded")
	} else if _, ok := (*c).(*gatedConn); !ok || shim.lines.side.Load() == nil {
		t.Errorf("shim mode: connection %T, side connection %v", *c, shim.lines.side.Load())
	}
	if !plain.plain {
		t.Error("v1.0.5 runs the shims")
	}
	if c := plain.lines.latest.Load(); c == nil {
		t.Error("plain mode: no connection recorded")
	} else if _, ok := (*c).(*gatedConn); ok || plain.lines.side.Load() != nil {
		t.Errorf("plain mode: connection %T wraps go-zookeeper's, side connection %v", *c, plain.lines.side.Load())
	}

	// Work on both, so that a warning repeated per request would show.
	if err := plain.CreateParents("/w/x"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Session{shim, plain} {
		if _, err := s.GetMany([]string{"/w", "/w/x", "/w/none"}); err != nil {
			t.Fatal(err)
		}
	}
	if w := shimLog.versionWarnings(); len(w) != 0 {
		t.Errorf("shim mode logged %q", w)
	}
	w := plainLog.versionWarnings()
	if len(w) != 1 {
		t.Fatalf("plain mode logged %d version warnings: %q", len(w), w)
	}
	for _, want := range []string{"go_zookeeper=v1.0.5", "tested=" + TestedGoZooKeeper, "multiRead", "reply cap", "gate"} {
		if !strings.Contains(w[0], want) {
			t.Errorf("the warning %q does not say %q", w[0], want)
		}
	}

	// Idle, both keep their lease: through the shims by pings on the
	// connection (credited by its pingLog), in plain mode by the
	// pinger's Exists.
	for name, s := range map[string]*Session{"shim": shim, "plain": plain} {
		before := s.lastAnswered.Load()
		testcluster.Await(t, s.timeout()/2, 10*time.Millisecond, name+" mode: the lease renewed while idle", func() bool {
			return s.lastAnswered.Load() > before
		})
	}
	if last, _ := shim.lines.side.Load().pings.lastPings(); last == 0 {
		t.Error("shim mode: no ping written on the connection")
	}
}

// outcome names a read's result for comparison: the data and stat, or the
// kind of error.
func outcome(data []byte, st *zk.Stat, err error) string {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return "no node"
	case errors.Is(err, zk.ErrNoAuth):
		return "no auth"
	case err != nil:
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%q %+v", data, *st)
}

// TestPlainModeSameResults: a session in plain mode (an untested
// go-zookeeper) and one through the shims give the same results for the
// same reads of the same nodes, GetMany's too (in plain mode one getData
// per node, through the shims multiRead batches), under a chroot: data,
// stats, missing and unreadable nodes, children, a multi's results and a
// watch's event.
func TestPlainModeSameResults(t *testing.T) {
	chroot := "/zkconn-" + testcluster.Name(t, "plainsame")
	setup, _ := modeSession(t, chroot, TestedGoZooKeeper)
	if err := setup.CreateParents("/n/x"); err != nil {
		t.Fatal(err)
	}
	const nodes = 300 // two multiRead batches
	var paths []string
	var creates []any
	for i := range nodes {
		p := fmt.Sprintf("/n/%d", i)
		paths = append(paths, p)
		if i%7 != 3 { // else never created
			creates = append(creates, &zk.CreateRequest{Path: p, Data: []byte(strings.Repeat(fmt.Sprint(i), i%4)), Acl: zk.WorldACL(zk.PermAll)})
		}
		if len(creates) == 100 || i == nodes-1 {
			if _, err := setup.Multi(creates...); err != nil {
				t.Fatal(err)
			}
			creates = creates[:0]
		}
	}
	if _, err := setup.Create("/n/secret", []byte("x"), 0, zk.WorldACL(zk.PermWrite)); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, "/n/secret")

	run := func(s *Session, tag string) []string {
		var out []string
		got, err := s.GetMany(paths)
		if err != nil {
			t.Fatalf("%s: GetMany: %v", tag, err)
		}
		for i, p := range paths {
			many := outcome(got[i].Data, &got[i].Stat, got[i].Err)
			one := outcome(s.Get(p))
			if many != one {
				t.Errorf("%s: %s: GetMany %s, Get %s", tag, p, many, one)
			}
			out = append(out, p+": "+many)
		}
		kids, st, err := s.Children("/n")
		if err != nil {
			t.Fatalf("%s: Children: %v", tag, err)
		}
		slices.Sort(kids)
		out = append(out, fmt.Sprintf("children %d %v %d", len(kids), kids[:3], st.NumChildren))
		lists, err := s.ChildrenMany([]string{"/n", "/n/1", "/n/none"})
		if err != nil {
			t.Fatalf("%s: ChildrenMany: %v", tag, err)
		}
		for _, l := range lists {
			slices.Sort(l.Children)
			out = append(out, fmt.Sprintf("children many %d %v", len(l.Children), l.Err))
		}
		ok, _, err := s.Exists("/n/3")
		out = append(out, fmt.Sprintf("exists /n/3: %v %v", ok, err))

		// A multi and a watch, on nodes of the mode's own.
		base := "/m-" + tag
		res, err := s.Multi(&zk.CreateRequest{Path: base, Acl: zk.WorldACL(zk.PermAll)},
			&zk.CreateRequest{Path: base + "/a", Data: []byte("a"), Acl: zk.WorldACL(zk.PermAll)})
		if err != nil {
			t.Fatalf("%s: Multi: %v", tag, err)
		}
		for _, r := range res {
			out = append(out, fmt.Sprintf("multi %s %v", strings.TrimPrefix(r.String, base), r.Error))
		}
		_, _, ch, err := s.GetW(base + "/a")
		if err != nil {
			t.Fatalf("%s: GetW: %v", tag, err)
		}
		if _, err := s.Set(base+"/a", []byte("b"), 0); err != nil {
			t.Fatalf("%s: Set: %v", tag, err)
		}
		select {
		case ev := <-ch:
			// The event's path is the full one, the chroot included.
			out = append(out, fmt.Sprintf("event %v %s", ev.Type, strings.TrimPrefix(ev.Path, chroot+base)))
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no watch event", tag)
		}
		return out
	}
	shim, _ := modeSession(t, chroot, TestedGoZooKeeper)
	plain, _ := modeSession(t, chroot, "v1.1.0")
	a, b := run(shim, "shim"), run(plain, "plain")
	if !slices.Equal(a, b) {
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Errorf("shim %s; plain %s", a[i], b[i])
			}
		}
		t.Fatalf("%d results through the shims, %d plain", len(a), len(b))
	}
	if !strings.Contains(strings.Join(a, "\n"), "no auth") || !strings.Contains(strings.Join(a, "\n"), "no node") {
		t.Error("the reads met no missing or unreadable node: the test is broken")
	}
}

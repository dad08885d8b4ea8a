package zkconn

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// liveHeap is the heap in use after two collections.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestSessionBuffers measures the live heap a Session holds (the figures
// of the package doc: a send buffer of 4 + 0xfffff bytes and a receive
// buffer of 1.5 MiB, against 2 x 1.5 MiB for go-zookeeper's defaults),
// and reads what ZooKeeper can send: the largest data node a client can
// write (its getData reply is over 1 MiB), written again through the
// Session (a request of exactly jute.maxbuffer), while one byte more is
// refused by the server; and a children list of 1.6 MB, over the initial
// receive buffer.
func TestSessionBuffers(t *testing.T) {
	c := testcluster.Shared(t)
	const mib = 1 << 20
	chroot := "/" + testcluster.Name(t, "buf")

	base := liveHeap()
	raw, events, err := zk.Connect([]string{c.ZooKeeperAddr()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := waitSession(events); err != nil {
		t.Fatal(err)
	}
	rawHeap := liveHeap() - base

	base = liveHeap()
	s, err := Dial(Config{Servers: []string{c.ZooKeeperAddr()}, Chroot: chroot, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	heap := liveHeap() - base
	t.Logf("live heap of a Session: %d bytes (%.2f MiB); of a go-zookeeper connection with its default buffers: %d bytes (%.2f MiB)",
		heap, float64(heap)/mib, rawHeap, float64(rawHeap)/mib)
	bufs := int64(sendLimit + 1536*1024)
	if heap < bufs || heap > bufs+256<<10 {
		t.Errorf("a Session holds %d bytes of live heap; want its buffers, %d bytes, and at most 256 KiB more", heap, bufs)
	}

	if err := s.CreateParents("/big"); err != nil {
		t.Fatal(err)
	}
	full := chroot + "/big"
	// setData: 8 bytes of header, the path and the data with their
	// lengths (4 each), the version (4).
	maxData := juteMaxBuffer - 20 - len(full)
	if _, err := raw.Set(full, make([]byte, maxData+1), -1); err == nil {
		t.Fatalf("ZooKeeper accepted a request of jute.maxbuffer + 1 bytes")
	}
	if err := waitSession(events); err != nil { // the server closed the connection
		t.Fatal(err)
	}
	data := []byte(strings.Repeat("x", maxData))
	if _, err := s.Set("/big", data, -1); err != nil {
		t.Fatalf("Set of the largest node (a request of jute.maxbuffer bytes): %v", err)
	}
	got, _, err := s.Get("/big")
	if err != nil || len(got) != maxData {
		t.Fatalf("Get of the largest node (a reply of %d bytes): %d bytes, %v", maxData+88, len(got), err)
	}
	t.Logf("largest node: %d bytes of data, a reply of %d bytes (jute.maxbuffer + %d)", maxData, maxData+88, maxData+88-juteMaxBuffer)

	// A children list longer than the initial receive buffer.
	const kids, batch = 8000, 2000
	name := func(i int) string { return fmt.Sprintf("%s-%06d", strings.Repeat("n", 193), i) }
	for from := 0; from < kids; from += batch {
		var ops []any
		for i := from; i < from+batch; i++ {
			ops = append(ops, &zk.CreateRequest{Path: full + "/" + name(i), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := raw.Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for from := 0; from < kids; from += batch {
			var ops []any
			for i := from; i < from+batch; i++ {
				ops = append(ops, &zk.DeleteRequest{Path: full + "/" + name(i), Version: -1})
			}
			if _, err := raw.Multi(ops...); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		_ = raw.Delete(full, -1)
	}()
	names, _, err := s.Children("/big")
	if err != nil || len(names) != kids {
		t.Fatalf("Children: %d names, %v; want %d", len(names), err, kids)
	}
	t.Logf("children list: %d names, a reply of about %d bytes", kids, kids*(4+len(name(0))))
	if st := s.Status(); !st.Healthy || st.Epoch != 1 {
		t.Errorf("after the large replies: %+v", st)
	}
}

// waitSession waits for the next session event with StateHasSession.
func waitSession(events <-chan zk.Event) error {
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("no session within 30s")
		}
	}
}

// TestMemberSendBuffer: a Session with MaxRequestMember holds 768 KiB less
// live heap than one with the default, sends a request of exactly its
// limit, and refuses a longer one unsent (zk.ErrShortBuffer) while the
// session goes on.
func TestMemberSendBuffer(t *testing.T) {
	c := testcluster.Shared(t)
	chroot := "/" + testcluster.Name(t, "memberbuf")
	base := liveHeap()
	s, err := Dial(Config{Servers: []string{c.ZooKeeperAddr()}, Chroot: chroot, SessionTimeout: 10 * time.Second, MaxRequest: MaxRequestMember})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	heap := liveHeap() - base
	bufs := int64(4 + MaxRequestMember + 1536*1024)
	t.Logf("live heap of a member's Session: %d bytes (%.2f MiB)", heap, float64(heap)/(1<<20))
	if heap < bufs || heap > bufs+256<<10 {
		t.Errorf("a member's Session holds %d bytes of live heap; want its buffers, %d bytes, and at most 256 KiB more", heap, bufs)
	}
	if err := s.CreateParents("/n"); err != nil {
		t.Fatal(err)
	}
	// setData: 8 bytes of header, the path and the data with their
	// lengths (4 each), the version (4).
	maxData := MaxRequestMember - 20 - len(chroot+"/n")
	if _, err := s.Set("/n", make([]byte, maxData), -1); err != nil {
		t.Fatalf("Set of a request of exactly MaxRequestMember bytes: %v", err)
	}
	if _, err := s.Set("/n", make([]byte, maxData+1), -1); !errors.Is(err, zk.ErrShortBuffer) {
		t.Fatalf("Set of a request one byte over MaxRequestMember: %v; want zk.ErrShortBuffer", err)
	}
	got, _, err := s.Get("/n")
	if err != nil || len(got) != maxData {
		t.Fatalf("Get after the refused Set: %d bytes, %v; want %d", len(got), err, maxData)
	}
	if st := s.Status(); !st.Healthy || st.Epoch != 1 {
		t.Errorf("after the refused request: %+v", st)
	}
}

// TestMemberReplyCap: a Session with a small MaxReply holds a receive
// buffer of that size, reads replies up to it, and fails a read whose
// reply is longer with a ReplyTooLargeError that names the node, the size
// and the setting. go-zookeeper drops the connection on such a reply; the
// session resumes (the same session, healthy), and the node is not read
// again: a second read fails at once, without another drop.
func TestMemberReplyCap(t *testing.T) {
	c := testcluster.Shared(t)
	chroot := "/" + testcluster.Name(t, "replycap")
	const limit = 64 << 10
	var dials atomic.Int32
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		dials.Add(1)
		return net.DialTimeout(network, address, timeout)
	}
	base := liveHeap()
	s, err := Dial(Config{Servers: []string{c.ZooKeeperAddr()}, Chroot: chroot, SessionTimeout: 10 * time.Second,
		MaxRequest: MaxRequestMember, MaxReply: limit, MaxReplyField: "Config.TestCap", Dialer: dialer})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	heap := liveHeap() - base
	bufs := int64(4 + MaxRequestMember + limit)
	t.Logf("live heap of a Session with MaxReply %d: %d bytes", limit, heap)
	if heap < bufs || heap > bufs+256<<10 {
		t.Errorf("the Session holds %d bytes of live heap; want its buffers, %d bytes, and at most 256 KiB more", heap, bufs)
	}

	// getData: 16 bytes of header, the data's length (4), the stat (68).
	fits := limit - 88
	for p, n := range map[string]int{"/fits": fits, "/over": fits + 1} {
		if err := s.CreateParents(p); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Set(p, make([]byte, n), -1); err != nil {
			t.Fatal(err)
		}
	}
	const kids = 400 // about 400 x (4 + 200) bytes: over the cap
	if err := s.CreateParents("/list"); err != nil {
		t.Fatal(err)
	}
	for from := 0; from < kids; from += 100 { // a multi's reply lists the paths created: 100 fit
		var ops []any
		for i := from; i < from+100; i++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("/list/%s-%03d", strings.Repeat("k", 196), i)})
		}
		if _, err := s.Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}

	if got, _, err := s.Get("/fits"); err != nil || len(got) != fits {
		t.Fatalf("Get of a reply of exactly the cap: %d bytes, %v; want %d", len(got), err, fits)
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d connections before any reply over the cap; want 1", n)
	}
	check := func(what string, err error, path string, size int) {
		t.Helper()
		var e *ReplyTooLargeError
		if !errors.Is(err, ErrReplyTooLarge) || !errors.As(err, &e) {
			t.Fatalf("%s: %v; want a ReplyTooLargeError", what, err)
		}
		if e.Path != path || e.Limit != limit || (size > 0 && e.Size != size) || e.Size <= limit ||
			!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "Config.TestCap") {
			t.Fatalf("%s: %+v (%v); want path %s, size %d, cap %d, the field named", what, e, err, path, size, limit)
		}
	}
	_, _, err = s.Get("/over")
	check("Get of a reply one byte over the cap", err, "/over", limit+1)
	_, _, _, err = s.ChildrenWFull("/list")
	check("ChildrenWFull of a list over the cap", err, "/list", 0)
	t.Logf("error: %v", err)
	// go-zookeeper dials again on its own after the second drop: awaited,
	// not read at once (a busy machine dials after this line).
	for deadline := time.Now().Add(10 * time.Second); dials.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	dropped := dials.Load()
	if dropped != 3 {
		t.Errorf("%d connections after two replies over the cap; want 3 (go-zookeeper drops one each)", dropped)
	}

	// Refused at once, unsent.
	_, _, err = s.Children("/list")
	check("Children of the list again", err, "/list", 0)
	_, _, _, err = s.GetW("/over")
	check("GetW of the node again", err, "/over", limit+1)
	if got, _, err := s.Get("/fits"); err != nil || len(got) != fits {
		t.Fatalf("Get after the refusals: %d bytes, %v", len(got), err)
	}
	if n := dials.Load(); n != dropped {
		t.Errorf("%d connections after the refused reads; want %d: nothing was sent", n, dropped)
	}
	if st := s.Status(); !st.Healthy || st.Epoch != 1 {
		t.Errorf("after the replies over the cap: %+v; want the same session, healthy", st)
	}
}

// TestLimitsValidate: MaxRequest and MaxReply outside their ranges fail
// Validate with ErrConfig naming the field; 0 (the default), the bounds
// and the named sizes pass.
func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		field     string
		set       func(*Config, int)
		bad, good []int
	}{
		{"MaxRequest", func(c *Config, n int) { c.MaxRequest = n },
			[]int{-1, 1, minRequest - 1, MaxRequestAny + 1}, []int{0, minRequest, MaxRequestMember, MaxRequestAny}},
		{"MaxReply", func(c *Config, n int) { c.MaxReply = n },
			[]int{-1, 1, MinReply - 1, MaxReplyAny + 1}, []int{0, MinReply, MaxReplyAny}},
	} {
		validate := func(n int) error {
			c := Config{Servers: []string{"x:1"}, SessionTimeout: time.Second}
			tc.set(&c, n)
			return c.Validate()
		}
		for _, n := range tc.bad {
			if err := validate(n); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("%s %d: %v; want ErrConfig naming %s", tc.field, n, err, tc.field)
			}
		}
		for _, n := range tc.good {
			if err := validate(n); err != nil {
				t.Errorf("%s %d: %v", tc.field, n, err)
			}
		}
	}
}

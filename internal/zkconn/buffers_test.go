package zkconn

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
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

func TestMaxRequestValidate(t *testing.T) {
	for _, n := range []int{-1, 1, minRequest - 1, MaxRequestAny + 1} {
		err := Config{Servers: []string{"x:1"}, SessionTimeout: time.Second, MaxRequest: n}.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "MaxRequest") {
			t.Errorf("MaxRequest %d: %v; want ErrConfig naming MaxRequest", n, err)
		}
	}
	for _, n := range []int{0, minRequest, MaxRequestMember, MaxRequestAny} {
		if err := (Config{Servers: []string{"x:1"}, SessionTimeout: time.Second, MaxRequest: n}).Validate(); err != nil {
			t.Errorf("MaxRequest %d: %v", n, err)
		}
	}
}

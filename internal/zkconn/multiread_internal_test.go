package zkconn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// u32 is v's two's complement, as ZooKeeper encodes an int.
func u32(v int32) uint32 { return uint32(v) }

// frameOf frames a server reply: length, xid, zxid 0, error 0, body.
func frameOf(xid int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(16+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = append(b, make([]byte, 12)...)
	return append(b, body...)
}

// readFrame reads one frame as go-zookeeper does: its length, then that
// many bytes, in reads of at most step bytes.
func readFrame(c net.Conn, step int) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(c, l[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(l[:]))
	for got := 0; got < len(b); {
		n, err := c.Read(b[got:min(len(b), got+step)])
		got += n
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// TestSideConnStripsSideReplies: replies to side requests are taken out
// of the stream, whatever the read sizes; every other byte reaches the
// reader unchanged, in order; a reply to a request whose caller gave up
// is dropped too.
func TestSideConnStripsSideReplies(t *testing.T) {
	for _, step := range []int{1, 3, 7, 64, 1 << 16} {
		client, server := net.Pipe()
		sc := newSideConn(client, 1<<20, nil, nil)
		x1, x2 := nextSideXid(), nextSideXid()
		connect := append(binary.BigEndian.AppendUint32(nil, 36), make([]byte, 36)...)
		normal := [][]byte{frameOf(1, []byte("one")), frameOf(-1, []byte("watch event")), frameOf(2, bytes.Repeat([]byte("b"), 300))}
		go func() {
			server.Write(connect)
			// The client's side requests, once it has read the connect reply.
			for range 2 {
				if _, err := readFrame(server, 1<<16); err != nil {
					return
				}
			}
			server.Write(normal[0])
			server.Write(frameOf(x1, []byte("side one")))
			server.Write(normal[1])
			server.Write(frameOf(x2, []byte("forgotten")))
			server.Write(normal[2])
		}()
		if _, err := readFrame(sc, step); err != nil {
			t.Fatal(err)
		}
		req := func(xid int32) []byte { return packet(xid, opMultiRead, 4) }
		ch1, err := sc.send(x1, req(x1), time.Now().Add(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.send(x2, req(x2), time.Now().Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		sc.forget(x2)
		for i, want := range normal {
			got, err := readFrame(sc, step)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want[4:]) {
				t.Fatalf("step %d, frame %d: read %q; want %q", step, i, got, want[4:])
			}
		}
		r := <-ch1
		if r.err != nil || string(r.frame[16:]) != "side one" || int32(binary.BigEndian.Uint32(r.frame)) != x1 {
			t.Fatalf("step %d: side reply %q, %v", step, r.frame, r.err)
		}
		sc.Close()
		server.Close()
	}
}

// TestSideConnFailsWaiters: a side request waiting when the connection
// fails gets errSideClosed; none is written before the connect reply or
// after the failure.
func TestSideConnFailsWaiters(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	sc := newSideConn(client, 1<<20, nil, nil)
	x := nextSideXid()
	if _, err := sc.send(x, packet(x, opMultiRead, 4), time.Now().Add(time.Second)); !errors.Is(err, errSideClosed) {
		t.Fatalf("send before the connect reply: %v; want errSideClosed", err)
	}
	go server.Write(append(binary.BigEndian.AppendUint32(nil, 4), 0, 0, 0, 0))
	if _, err := readFrame(sc, 8); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, server)
	ch, err := sc.send(x, packet(x, opMultiRead, 4), time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := readFrame(sc, 8); read <- err }()
	server.Close()
	if err := <-read; err == nil {
		t.Fatal("read after the server closed: no error")
	}
	if r := <-ch; !errors.Is(r.err, errSideClosed) {
		t.Fatalf("waiter: %v; want errSideClosed", r.err)
	}
	if _, err := sc.send(x, packet(x, opMultiRead, 4), time.Now().Add(time.Second)); !errors.Is(err, errSideClosed) {
		t.Fatalf("send after the failure: %v; want errSideClosed", err)
	}
}

// multiReadReply encodes a reply to a multiRead: per entry, data (nil:
// no node) and a stat whose version is the entry's index.
func multiReadReply(data [][]byte) []byte {
	b := make([]byte, 16) // xid, zxid, error 0
	for i, d := range data {
		if d == nil {
			b = appendMultiHeader(b, -1, false, errCodeNoNode)
			b = binary.BigEndian.AppendUint32(b, u32(errCodeNoNode))
			continue
		}
		b = appendMultiHeader(b, opGetData, false, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(len(d)))
		b = append(b, d...)
		st := make([]byte, statLen)
		binary.BigEndian.PutUint32(st[32:], uint32(i))
		b = append(b, st...)
	}
	return appendMultiHeader(b, -1, true, -1)
}

func TestDecodeMultiRead(t *testing.T) {
	data := [][]byte{[]byte("a"), nil, {}, []byte(strings.Repeat("x", 300))}
	frame := multiReadReply(data)
	out := make([]NodeData, len(data))
	if code, err := decodeMultiRead(frame, out); code != 0 || err != nil {
		t.Fatalf("decode: %d, %v", code, err)
	}
	for i, d := range data {
		switch {
		case d == nil && !errors.Is(out[i].Err, zk.ErrNoNode):
			t.Errorf("%d: %v; want zk.ErrNoNode", i, out[i].Err)
		case d != nil && (!bytes.Equal(out[i].Data, d) || out[i].Stat.Version != int32(i) || out[i].Err != nil):
			t.Errorf("%d: %q version %d %v; want %q version %d", i, out[i].Data, out[i].Stat.Version, out[i].Err, d, i)
		}
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		reads int
	}{
		{"cut anywhere", frame[:len(frame)-5], len(data)},
		{"fewer results", frame, len(data) + 1},
		{"more results", frame, len(data) - 1},
		{"short header", frame[:10], len(data)},
	} {
		if _, err := decodeMultiRead(tc.frame, make([]NodeData, tc.reads)); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	unimpl := make([]byte, 16)
	binary.BigEndian.PutUint32(unimpl[12:], u32(errCodeUnimpl))
	if code, _ := decodeMultiRead(unimpl, out); code != errCodeUnimpl {
		t.Errorf("an unimplemented reply: code %d", code)
	}
}

// FuzzDecodeMultiRead: any bytes decode without a panic, and a reply
// that decodes has exactly as many results as reads: the same bytes do
// not decode for one read more or one fewer.
func FuzzDecodeMultiRead(f *testing.F) {
	f.Add(multiReadReply([][]byte{[]byte("a"), nil}), 2)
	f.Add(multiReadReply(nil), 0)
	f.Fuzz(func(t *testing.T, frame []byte, reads int) {
		if reads < 0 || reads > 1000 {
			return
		}
		code, err := decodeMultiRead(frame, make([]NodeData, reads))
		if code != 0 || err != nil {
			return
		}
		if _, err := decodeMultiRead(frame, make([]NodeData, reads+1)); err == nil {
			t.Fatalf("decodes for %d reads and for %d", reads, reads+1)
		}
		if reads > 0 {
			if _, err := decodeMultiRead(frame, make([]NodeData, reads-1)); err == nil {
				t.Fatalf("decodes for %d reads and for %d", reads, reads-1)
			}
		}
	})
}

// fakeZooKeeper is a server that speaks enough of ZooKeeper's protocol
// for a session (connect, ping, getData, close) and answers multiRead
// "unimplemented", as servers before 3.6 do. getData returns the path as
// the node's data.
func fakeZooKeeper(t *testing.T, multiReads *atomic.Int32) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return testcluster.Serve(t, l, func(c net.Conn) {
		defer c.Close()
		if _, err := readFrame(c, 1<<16); err != nil {
			return
		}
		body := binary.BigEndian.AppendUint32(nil, 0)
		body = binary.BigEndian.AppendUint32(body, 10000)
		body = binary.BigEndian.AppendUint64(body, 1)
		body = binary.BigEndian.AppendUint32(body, 16)
		body = append(body, make([]byte, 16)...)
		c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
		for {
			req, err := readFrame(c, 1<<16)
			if err != nil || len(req) < 8 {
				return
			}
			xid := int32(binary.BigEndian.Uint32(req))
			head := func(code int32, body []byte) []byte {
				b := binary.BigEndian.AppendUint32(nil, uint32(16+len(body)))
				b = binary.BigEndian.AppendUint32(b, uint32(xid))
				b = binary.BigEndian.AppendUint64(b, 1)
				b = binary.BigEndian.AppendUint32(b, u32(code))
				return append(b, body...)
			}
			switch int32(binary.BigEndian.Uint32(req[4:])) {
			case opMultiRead:
				multiReads.Add(1)
				c.Write(head(errCodeUnimpl, nil))
			case opGetData:
				n := binary.BigEndian.Uint32(req[8:])
				path := req[12 : 12+n]
				if strings.HasSuffix(string(path), "/missing") {
					c.Write(head(errCodeNoNode, nil))
					continue
				}
				b := binary.BigEndian.AppendUint32(nil, uint32(len(path)))
				b = append(b, path...)
				c.Write(head(0, append(b, make([]byte, statLen)...)))
			case opCloseSession:
				c.Write(head(0, nil))
				return
			default:
				c.Write(head(0, nil))
			}
		}
	})
}

// TestGetManyWithoutMultiRead: against a server without multiRead, GetMany
// reads each node on its own, with the same results, and asks for a
// multiRead only once in the session's life.
func TestGetManyWithoutMultiRead(t *testing.T) {
	var multiReads atomic.Int32
	s, err := Dial(Config{Servers: []string{fakeZooKeeper(t, &multiReads)}, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var paths []string
	for range 300 {
		paths = append(paths, "/n/"+string(rune('a'+rand.IntN(26))))
	}
	paths = append(paths, "/n/missing")
	for range 3 {
		got, err := s.GetMany(paths)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range paths[:len(paths)-1] {
			if string(got[i].Data) != p || got[i].Err != nil {
				t.Fatalf("%s: %q, %v", p, got[i].Data, got[i].Err)
			}
		}
		if !errors.Is(got[len(got)-1].Err, zk.ErrNoNode) {
			t.Fatalf("missing node: %v", got[len(got)-1].Err)
		}
	}
	// The first call's two batches went out together.
	if n := multiReads.Load(); n < 1 || n > 2 {
		t.Fatalf("%d multiReads sent; want the first call's only (1 or 2)", n)
	}
}

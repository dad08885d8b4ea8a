package zkconn

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
)

// chunkConn serves a byte stream in reads of at most chunk bytes and
// discards writes.
type chunkConn struct {
	net.Conn
	data  []byte
	chunk int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.data)
	c.data = c.data[n:]
	return n, nil
}

func (c *chunkConn) Write(p []byte) (int, error) { return len(p), nil }

// request is a request as go-zookeeper writes it: length, xid, opcode, and
// for a read the path.
func request(xid, op int32, path string) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, uint32(op))
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	b = append(b, path...)
	b = append(b, 0) // watch
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// frame is a reply of size bytes after its length, from xid.
func frame(xid int32, size int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	return append(b, make([]byte, size-4)...)
}

// TestReplyGuard follows the framing of replies split at every read size
// (go-zookeeper reads a length, then the reply, but a stream may split
// anywhere): replies within the cap clear their reads; a reply over it
// names the read it answers (a getChildren, a getData, a multi), and the
// connection reads nothing more.
func TestReplyGuard(t *testing.T) {
	const limit = 100
	for _, over := range []struct {
		xid  int32
		want sentRead
	}{{5, sentRead{"getChildren", "/c/a"}}, {6, sentRead{"getData", "/c/b"}}, {7, sentRead{op: "multi"}}} {
		for chunk := 1; chunk <= 64; chunk++ {
			var stream []byte
			connect := binary.BigEndian.AppendUint32(nil, 36)
			stream = append(stream, append(connect, make([]byte, 36)...)...) // the connect reply: no xid, longer than 8
			stream = append(stream, frame(-1, 50)...)                        // a watch event
			for _, x := range []int32{5, 6, 7} {
				if x != over.xid {
					stream = append(stream, frame(x, limit)...) // exactly the cap
				}
			}
			stream = append(stream, frame(over.xid, limit+1)...)
			var got []sentRead
			g := newReplyGuard(&chunkConn{data: stream, chunk: chunk}, limit, func(r sentRead, size int) {
				if size != limit+1 {
					t.Errorf("size %d; want %d", size, limit+1)
				}
				got = append(got, r)
			})
			for _, req := range [][]byte{request(5, opGetChildren2, "/c/a"), request(6, opGetData, "/c/b"),
				request(7, opMulti, ""), request(8, 1, "/c/created"), request(-2, 11, "")} {
				if _, err := g.Write(req); err != nil {
					t.Fatal(err)
				}
			}
			if len(g.pending) != 3 {
				t.Fatalf("pending after the writes: %v; want the two reads and the multi", g.pending)
			}
			buf := make([]byte, 4096)
			var err error
			for err == nil {
				// go-zookeeper's reads: a length, then the reply.
				if _, err = io.ReadFull(g, buf[:4]); err != nil {
					break
				}
				n := int(binary.BigEndian.Uint32(buf[:4]))
				if n > limit {
					break
				}
				_, err = io.ReadFull(g, buf[:n])
			}
			if err != nil {
				t.Fatalf("chunk %d: %v before the reply over the cap", chunk, err)
			}
			if len(got) != 1 || got[0] != over.want {
				t.Fatalf("chunk %d: reported %v; want %v", chunk, got, over.want)
			}
			if len(g.pending) != 1 {
				t.Errorf("chunk %d: pending %v; want only the read answered over the cap", chunk, g.pending)
			}
			if _, err := g.Read(buf); err == nil {
				t.Errorf("chunk %d: a read after the reply over the cap succeeded", chunk)
			}
		}
	}
}

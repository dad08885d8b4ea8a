package scale

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// zkFrame is one client packet: length, xid, op code, body.
func zkFrame(xid, op int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, uint32(op))
	return append(b, body...)
}

func multiReadBody(paths ...string) []byte {
	var b []byte
	for _, p := range paths {
		b = binary.BigEndian.AppendUint32(b, zkOpGetData)
		b = append(b, 0)
		b = binary.BigEndian.AppendUint32(b, 0xffffffff)
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	b = append(b, 1)
	return binary.BigEndian.AppendUint32(b, 0xffffffff)
}

// TestZKProxyCounts sends a connect request, a getData, a ping and a
// multiRead of three nodes through the proxy, written a few bytes at a
// time, and checks the counts and that the server got every byte.
func TestZKProxyCounts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	p, err := newZKProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	connect := binary.BigEndian.AppendUint32(nil, 4)
	connect = append(connect, 0, 0, 0, 0)
	var stream []byte
	stream = append(stream, connect...)
	stream = append(stream, zkFrame(1, zkOpGetData, []byte{0, 0, 0, 1, '/', 0})...)
	stream = append(stream, zkFrame(-2, zkOpPing, nil)...)
	stream = append(stream, zkFrame(2, zkOpMultiRead, multiReadBody("/a", "/bb", "/ccc"))...)

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(stream); i += 5 {
		if _, err := c.Write(stream[i:min(i+5, len(stream))]); err != nil {
			t.Fatal(err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	select {
	case b := <-got:
		if string(b) != string(stream) {
			t.Fatalf("server got %d bytes, want the %d sent", len(b), len(stream))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server got nothing within 10 s")
	}
	c.Close()
	s := p.snapshot()
	if s.connects != 1 || s.requests != 3 || s.pings != 1 || s.ops[zkOpMultiRead] != 1 {
		t.Errorf("connects %d, requests %d, pings %d, multiReads %d; want 1, 3, 1, 1", s.connects, s.requests, s.pings, s.ops[zkOpMultiRead])
	}
	if s.reads != 4 || s.subReads != 3 || s.readRequests != 2 {
		t.Errorf("nodes read %d (in multiReads %d), read requests %d; want 4 (3), 2", s.reads, s.subReads, s.readRequests)
	}
	if s.up != int64(len(stream)) {
		t.Errorf("bytes up %d, want %d", s.up, len(stream))
	}
}

package zkconn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// connectedSideConn is a sideConn on client, with log, past the connect
// reply (which server sends); the frames written on it come on written,
// closed once the connection is. The test's end closes it.
func connectedSideConn(t *testing.T, client, server net.Conn, log *pingLog) (*sideConn, <-chan []byte) {
	t.Helper()
	sc := newSideConn(client, 1<<20, log)
	t.Cleanup(func() { sc.Close() })
	go server.Write(append(binary.BigEndian.AppendUint32(nil, 4), 0, 0, 0, 0))
	if _, err := readFrame(sc, 8); err != nil {
		t.Fatal(err)
	}
	written := make(chan []byte, 8)
	go func() {
		defer close(written)
		for {
			f, err := readFrame(server, 1<<16)
			if err != nil {
				return
			}
			written <- f
		}
	}()
	return sc, written
}

// TestSideConnCreditsPings: a ping reply renews the lease from the send
// time of the oldest ping unanswered on the connection, go-zookeeper's
// (written through Write) and the Session's own (ping) alike, in the
// order written; replies to other requests, and a ping reply with no
// ping noted, renew nothing; every reply still reaches go-zookeeper.
func TestSideConnCreditsPings(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	var (
		mu       sync.Mutex
		clock    int64 = 100
		credited []int64
	)
	log := newPingLog(func() int64 { clock++; return clock }, func(sent int64) {
		mu.Lock()
		credited = append(credited, sent)
		mu.Unlock()
	})
	sc, written := connectedSideConn(t, client, server, log)
	// go-zookeeper's ping (noted at 101), a read, the Session's ping (102).
	if _, err := sc.Write(pingFrame); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Write(packet(1, opGetData, 4)); err != nil {
		t.Fatal(err)
	}
	sc.ping(time.Now().Add(5 * time.Second))
	for i, want := range [][]byte{pingFrame, packet(1, opGetData, 4), pingFrame} {
		if got := <-written; !bytes.Equal(got, want[4:]) {
			t.Fatalf("frame %d on the wire: %x; want %x", i, got, want[4:])
		}
	}

	creditedNow := func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(credited)
	}
	replies := []struct {
		frame []byte
		want  []int64 // credited once it was read
	}{
		{frameOf(1, []byte("data")), nil},
		{frameOf(pingXid, nil), []int64{101}},
		{frameOf(pingXid, nil), []int64{101, 102}},
		{frameOf(pingXid, nil), []int64{101, 102}}, // no ping unanswered
	}
	for i, r := range replies {
		go server.Write(r.frame)
		got, err := readFrame(sc, 3)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, r.frame[4:]) {
			t.Fatalf("reply %d read as %x; want %x", i, got, r.frame[4:])
		}
		if c := creditedNow(); !slices.Equal(c, r.want) {
			t.Fatalf("after reply %d: credited %v; want %v", i, c, r.want)
		}
	}
	if isPing(packet(pingXid, opGetData, 0)) || !isPing(pingFrame) {
		t.Fatal("isPing: a ping is a 12-byte frame of xid -2 and opcode 11")
	}
}

// TestPingLogBounded: past maxUnansweredPings unanswered, a connection's
// pings are no longer credited (the pairing of replies with pings could
// no longer be told), not even those written later.
func TestPingLogBounded(t *testing.T) {
	var clock int64
	credits := 0
	l := newPingLog(func() int64 { clock++; return clock }, func(int64) { credits++ })
	for range maxUnansweredPings + 1 {
		l.written()
	}
	l.replied()
	l.written()
	l.replied()
	if credits != 0 {
		t.Fatalf("%d credits after %d unanswered pings; want none", credits, maxUnansweredPings+1)
	}
	var nilLog *pingLog
	nilLog.written()
	nilLog.replied()
}

// TestSideConnQuietAfterClose: once go-zookeeper wrote the session's
// close request (the connection is then half-closed), neither a ping nor
// a side request of the Session's own is written after it.
func TestSideConnQuietAfterClose(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	sc, written := connectedSideConn(t, client, server, newPingLog(func() int64 { return 1 }, func(int64) {}))
	closeReq := packet(7, opCloseSession, 0)
	if _, err := sc.Write(closeReq); err != nil {
		t.Fatal(err)
	}
	sc.ping(time.Now().Add(time.Second))
	x := nextSideXid()
	if _, err := sc.send(x, packet(x, opMultiRead, 4), time.Now().Add(time.Second)); !errors.Is(err, errSideClosed) {
		t.Errorf("a side request after the close request: %v; want errSideClosed", err)
	}
	client.Close()
	var frames [][]byte
	for f := range written {
		frames = append(frames, f)
	}
	if len(frames) != 1 || !bytes.Equal(frames[0], closeReq[4:]) {
		t.Fatalf("frames on the wire %x; want the close request alone", frames)
	}
}

package benchkit

import (
	"encoding/binary"
	"net"
	"testing"
)

// request encodes a request frame of the given API key with a body of n
// bytes.
func request(key int16, n int) []byte {
	b := make([]byte, 4+2+n)
	binary.BigEndian.PutUint32(b, uint32(2+n))
	binary.BigEndian.PutUint16(b[4:], uint16(key))
	return b
}

func TestCountingConnSplitWrites(t *testing.T) {
	var r Requests
	var stream []byte
	stream = append(stream, request(APIFetch, 40)...)
	stream = append(stream, request(APIOffsetCommit, 0)...)
	stream = append(stream, request(APIFetch, 3)...)
	stream = append(stream, request(APIHeartbeat, 1000)...)
	client, server := net.Pipe()
	defer server.Close()
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := server.Read(buf); err != nil {
				return
			}
		}
	}()
	c := &countingConn{Conn: client, r: &r}
	// Cut the stream at every awkward place: inside sizes, inside keys.
	for i := 0; i < len(stream); {
		n := min(1+i%7, len(stream)-i)
		if _, err := c.Write(stream[i : i+n]); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	client.Close()
	got := r.Snapshot()
	if got[APIFetch] != 2 || got[APIOffsetCommit] != 1 || got[APIHeartbeat] != 1 || got.Sum(APIMetadata, APIOffsetFetch) != 0 {
		t.Fatalf("counts: fetch %d, commit %d, heartbeat %d, other %d", got[APIFetch], got[APIOffsetCommit], got[APIHeartbeat], got.Sum(APIMetadata, APIOffsetFetch))
	}
}

func TestPercentile(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	if Median(v) != 3 || Percentile(v, 99) != 5 || Percentile(v, 0) != 1 {
		t.Fatalf("median %v p99 %v p0 %v", Median(v), Percentile(v, 99), Percentile(v, 0))
	}
	if Median([]float64{1, 2, 3, 4}) != 2.5 {
		t.Fatal("even median")
	}
}

func TestParseTxn(t *testing.T) {
	for _, c := range []struct {
		line      string
		typ, path string
		zxid      int64
	}{
		{"12/1/26, 12:33:28 AM UTC session 0x100000c3d420001 cxid 0x2 zxid 0x3 create /kafka,,[31,s{'world,'anyone}", "create", "/kafka", 3},
		{"12/1/26, 12:33:28 AM UTC session 0x1 cxid 0x3 zxid 0x1f delete '/kafka/consumers/g/owners/t/5", "delete", "/kafka/consumers/g/owners/t/5", 31},
		{"12/1/26, 12:33:29 AM UTC session 0x1 cxid 0x2 zxid 0x7 error -101", "error", "-101", 7},
		{"12/7/26, 11:44:09 AM UTC session 0x1 cxid 0x9 zxid 0x8 multi create:   ]/kafka/consumers/g/owners/t/32   9g_m-1         world   anyone   \x01;create:   \\/kafka/consumers/g/owners/t/4   9g_m-1 world", "multi", "/kafka/consumers/g/owners/t/32", 8},
	} {
		got, ok := parseTxn(c.line)
		if !ok || got.Type != c.typ || got.Path != c.path || got.Zxid != c.zxid {
			t.Errorf("%q: %+v %v", c.line, got, ok)
		}
	}
	b := Classify([]Txn{
		{Zxid: 1, Session: "a", Type: "create", Path: "/kafka/consumers/g/owners/t/1"},
		{Zxid: 2, Session: "a", Type: "error", Path: "-110"},
		{Zxid: 3, Session: "b", Type: "delete", Path: "/kafka/consumers/g/ids/x"},
		{Zxid: 4, Session: "c", Type: "createSession"},
		{Zxid: 5, Session: "d", Type: "setData", Path: "/kafka/brokers/topics/t/partitions/0/state"},
	}, "/kafka/consumers/g")
	if b.Total != 5 || b.Group["create owners"] != 1 || b.Group["failed (-110)"] != 0 || b.Group["failed (node exists)"] != 1 || b.Group["delete ids"] != 1 || b.Sessions != 1 || len(b.Other) != 1 {
		t.Errorf("breakdown %+v", b)
	}
}

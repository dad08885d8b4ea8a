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

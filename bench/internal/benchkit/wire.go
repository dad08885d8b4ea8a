package benchkit

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Kafka API keys the benchmarks print.
const (
	APIProduce         = 0
	APIFetch           = 1
	APIListOffsets     = 2
	APIMetadata        = 3
	APIOffsetCommit    = 8
	APIOffsetFetch     = 9
	APIFindCoordinator = 10
	APIJoinGroup       = 11
	APIHeartbeat       = 12
	APILeaveGroup      = 13
	APISyncGroup       = 14
	APIVersions        = 18
	maxAPIKey          = 128
)

// CoordinatorAPIs are the requests a client sends only to its group
// coordinator.
var CoordinatorAPIs = []int{APIOffsetCommit, APIOffsetFetch, APIJoinGroup, APIHeartbeat, APILeaveGroup, APISyncGroup}

// Requests counts Kafka requests by API key, as written on the wire by
// every connection dialed through its Dialer. Safe for concurrent use.
type Requests struct {
	n     [maxAPIKey]atomic.Int64
	other atomic.Int64 // keys >= maxAPIKey (none expected)
}

// Counts is a snapshot of Requests.
type Counts [maxAPIKey]int64

// Snapshot returns the counts so far.
func (r *Requests) Snapshot() Counts {
	var c Counts
	for i := range r.n {
		c[i] = r.n[i].Load()
	}
	return c
}

// Sub returns c - o.
func (c Counts) Sub(o Counts) Counts {
	for i := range c {
		c[i] -= o[i]
	}
	return c
}

// Sum of the counts of keys.
func (c Counts) Sum(keys ...int) int64 {
	var s int64
	for _, k := range keys {
		s += c[k]
	}
	return s
}

// Dialer returns a dialer for sarama's Config.Net.Proxy.Dialer (it has
// the Dial method of golang.org/x/net/proxy.Dialer) that dials TCP as
// sarama would and counts every request written on the connection.
func (r *Requests) Dialer(timeout time.Duration) *CountingDialer {
	return &CountingDialer{d: net.Dialer{Timeout: timeout}, r: r}
}

// CountingDialer dials and wraps each connection in a request counter.
type CountingDialer struct {
	d net.Dialer
	r *Requests
}

// Dial dials addr and counts the requests written to it.
func (d *CountingDialer) Dial(network, addr string) (net.Conn, error) {
	c, err := d.d.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, r: d.r}, nil
}

// countingConn parses the client's byte stream as Kafka requests: a
// 4-byte big-endian size, then the request (2-byte API key, 2-byte
// version, ...) of that size. Writes may cut a request anywhere.
type countingConn struct {
	net.Conn
	r    *Requests
	mu   sync.Mutex // sarama writes from one goroutine; the lock is cheap insurance
	hdr  [6]byte
	hdrN int
	skip int64 // bytes of the current request still to pass over
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.count(p[:n])
	return n, err
}

func (c *countingConn) count(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(p) > 0 {
		if c.skip > 0 {
			k := int(min(c.skip, int64(len(p))))
			c.skip -= int64(k)
			p = p[k:]
			continue
		}
		k := copy(c.hdr[c.hdrN:], p)
		c.hdrN += k
		p = p[k:]
		if c.hdrN < len(c.hdr) {
			return
		}
		size := int64(int32(binary.BigEndian.Uint32(c.hdr[0:4])))
		key := int(int16(binary.BigEndian.Uint16(c.hdr[4:6])))
		if key >= 0 && key < maxAPIKey {
			c.r.n[key].Add(1)
		} else {
			c.r.other.Add(1)
		}
		c.hdrN = 0
		c.skip = max(size-2, 0)
	}
}

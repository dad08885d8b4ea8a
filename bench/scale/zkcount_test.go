package scale

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ZooKeeper request types (the op codes of ZooKeeper's wire protocol).
const (
	zkOpCreate        = 1
	zkOpDelete        = 2
	zkOpExists        = 3
	zkOpGetData       = 4
	zkOpSetData       = 5
	zkOpGetACL        = 6
	zkOpGetChildren   = 8
	zkOpSync          = 9
	zkOpPing          = 11
	zkOpGetChildren2  = 12
	zkOpCheck         = 13
	zkOpMulti         = 14
	zkOpCreate2       = 15
	zkOpMultiRead     = 22
	zkOpSetWatches    = 101
	zkOpSetWatches2   = 105
	zkOpAddWatch      = 106
	zkOpCloseSession  = -11
	zkOpMax           = 128
	zkMaxCountedFrame = 64 << 20
)

var zkOpNames = map[int]string{
	zkOpCreate: "create", zkOpDelete: "delete", zkOpExists: "exists", zkOpGetData: "getData",
	zkOpSetData: "setData", zkOpGetACL: "getACL", zkOpGetChildren: "getChildren", zkOpSync: "sync",
	zkOpPing: "ping", zkOpGetChildren2: "getChildren2", zkOpCheck: "check", zkOpMulti: "multi",
	zkOpCreate2: "create2", zkOpMultiRead: "multiRead", zkOpSetWatches: "setWatches",
	zkOpSetWatches2: "setWatches2", zkOpAddWatch: "addWatch", 19: "createContainer", 21: "createTTL",
	100: "auth",
}

// zkReadOps are the requests that read: each node a multiRead names counts
// as one read (zkCounts.reads), the multiRead itself as one request.
var zkReadOps = []int{zkOpExists, zkOpGetData, zkOpGetACL, zkOpGetChildren, zkOpGetChildren2}

// zkProxy is a TCP proxy in front of one ZooKeeper server that counts the
// requests its clients send, by op code, and the bytes either way. Only
// the zkgroup side dials it, so it sees the members' ZooKeeper traffic and
// nothing else (not the brokers', not the zxid marks).
type zkProxy struct {
	ln       net.Listener
	upstream string
	n        [zkOpMax]atomic.Int64
	subReads atomic.Int64 // nodes read inside multiRead requests
	connects atomic.Int64 // sessions connected or reconnected (ConnectRequest)
	other    atomic.Int64 // op codes outside 0..zkOpMax (closeSession)
	up, down atomic.Int64 // bytes client->server, server->client
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
}

func newZKProxy(upstream string) (*zkProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("zookeeper proxy: %w", err)
	}
	p := &zkProxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial instead of the server's.
func (p *zkProxy) Addr() string { return p.ln.Addr().String() }

func (p *zkProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, u) {
			return
		}
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			p.forward(c, u)
			u.Close()
			c.Close()
		}()
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(countingWriter{c, &p.down}, u)
			c.Close()
			u.Close()
		}()
	}
}

func (p *zkProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// forward copies the client's stream to the server frame by frame (4-byte
// length, then the packet): the first packet is the ConnectRequest, every
// later one starts with the request header (xid, op code).
func (p *zkProxy) forward(c, u net.Conn) {
	// Buffered: a small frame is one read of the socket, not two (the
	// proxy's own CPU counts in zkgroup's idle figure, its memory in
	// zkgroup's RSS: 4 KiB a connection, a larger frame's rest is read
	// straight into buf).
	r := bufio.NewReader(c)
	var hdr [4]byte
	var buf []byte
	for first := true; ; first = false {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		size := int(int32(binary.BigEndian.Uint32(hdr[:])))
		if size < 0 || size > zkMaxCountedFrame {
			return
		}
		buf = slices.Grow(buf[:0], 4+size)[:4+size]
		copy(buf, hdr[:])
		if _, err := io.ReadFull(r, buf[4:]); err != nil {
			return
		}
		p.count(first, buf[4:])
		if _, err := u.Write(buf); err != nil {
			return
		}
		p.up.Add(int64(len(buf)))
	}
}

func (p *zkProxy) count(first bool, pkt []byte) {
	if first {
		p.connects.Add(1)
		return
	}
	if len(pkt) < 8 {
		return
	}
	op := int(int32(binary.BigEndian.Uint32(pkt[4:8])))
	if op < 0 || op >= zkOpMax {
		p.other.Add(1)
		return
	}
	p.n[op].Add(1)
	if op == zkOpMultiRead {
		p.subReads.Add(int64(multiReadOps(pkt[8:])))
	}
}

// multiReadOps counts the operations of a multiRead request body: each is
// a multi header (type, done, err) and a path and watch flag, up to the
// header marked done.
func multiReadOps(b []byte) int {
	n := 0
	for len(b) >= 9 {
		done := b[4] != 0
		b = b[9:]
		if done || len(b) < 4 {
			break
		}
		l := int(int32(binary.BigEndian.Uint32(b)))
		if l < 0 || len(b) < 4+l+1 {
			break
		}
		b = b[4+l+1:]
		n++
	}
	return n
}

// countingWriter adds what it writes to n as it goes.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (w countingWriter) Write(b []byte) (int, error) {
	k, err := w.w.Write(b)
	w.n.Add(int64(k))
	return k, err
}

// zkCounts is a snapshot of a zkProxy's counters.
type zkCounts struct {
	ops                 [zkOpMax]int64
	subReads, connects  int64
	other, up, down     int64
	requests, pings     int64 // every request; of them pings
	reads, readRequests int64 // nodes read (a multiRead's nodes each); requests that read
}

func (p *zkProxy) snapshot() zkCounts {
	if p == nil {
		return zkCounts{}
	}
	var c zkCounts
	for i := range p.n {
		c.ops[i] = p.n[i].Load()
	}
	c.subReads, c.connects, c.other = p.subReads.Load(), p.connects.Load(), p.other.Load()
	c.up, c.down = p.up.Load(), p.down.Load()
	return c.total()
}

func (c zkCounts) total() zkCounts {
	c.requests, c.reads, c.readRequests = c.other, c.subReads, 0
	for i, n := range c.ops {
		c.requests += n
		if slices.Contains(zkReadOps, i) {
			c.reads += n
			c.readRequests += n
		}
	}
	c.readRequests += c.ops[zkOpMultiRead]
	c.pings = c.ops[zkOpPing]
	return c
}

func (c zkCounts) sub(o zkCounts) zkCounts {
	for i := range c.ops {
		c.ops[i] -= o.ops[i]
	}
	c.subReads -= o.subReads
	c.connects -= o.connects
	c.other -= o.other
	c.up -= o.up
	c.down -= o.down
	return c.total()
}

// String lists the requests by op code, largest first, then the nodes read
// and the bytes.
func (c zkCounts) String() string {
	type kv struct {
		name string
		n    int64
	}
	var kvs []kv
	for i, n := range c.ops {
		if n == 0 {
			continue
		}
		name := zkOpNames[i]
		if name == "" {
			name = fmt.Sprintf("op%d", i)
		}
		kvs = append(kvs, kv{name, n})
	}
	if c.other > 0 {
		kvs = append(kvs, kv{"closeSession/other", c.other})
	}
	slices.SortFunc(kvs, func(a, b kv) int { return int(b.n - a.n) })
	var parts []string
	for _, x := range kvs {
		parts = append(parts, fmt.Sprintf("%s %d", x.name, x.n))
	}
	return fmt.Sprintf("%d requests (%s); nodes read %d (%d in multiReads); connects %d; bytes up %d, down %d",
		c.requests, strings.Join(parts, ", "), c.reads, c.subReads, c.connects, c.up, c.down)
}

// Close stops accepting, cuts every connection and waits for the copies.
func (p *zkProxy) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

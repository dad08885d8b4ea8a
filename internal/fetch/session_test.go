package fetch_test

import (
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// sentReq is one request as the fetcher's hook heard of it.
type sentReq struct {
	broker                          int32
	kind, fetched, named, forgotten int
}

// requestLog keeps what a fetcher's hook hears.
type requestLog struct {
	mu   sync.Mutex
	reqs []sentReq
}

func (r *requestLog) hook(broker int32, kind, fetched, named, forgotten int) {
	r.mu.Lock()
	r.reqs = append(r.reqs, sentReq{broker, kind, fetched, named, forgotten})
	r.mu.Unlock()
}

// since returns the requests from the i-th on.
func (r *requestLog) since(i int) []sentReq {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sentReq(nil), r.reqs[min(i, len(r.reqs)):]...)
}

// loggedFetcher returns a Fetcher over client (closed at the end of the
// test) and the log of its requests.
func loggedFetcher(t *testing.T, client sarama.Client, cfg fetch.Config) (*fetch.Fetcher, *requestLog) {
	t.Helper()
	f := newFetcher(t, client, cfg)
	log := &requestLog{}
	fetch.SetRequestHook(f, log.hook)
	return f, log
}

func (r *requestLog) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

// TestSessionIdlePartitions: with fetch sessions, what a request names
// does not grow with idle partitions. One partition takes writes while
// 10, then 999 idle partitions of the same broker are fetched beside it:
// once a request has fetched them all (named them once, in the session's
// full request or an incremental one that adds them), every incremental
// request names at most the one active partition and forgets at most it;
// every message is read exactly once. On Kafka 3.9 (ZooKeeper mode) and
// Kafka 4 (KRaft).
func TestSessionIdlePartitions(t *testing.T) { onEachKafka(t, testSessionIdle) }

func testSessionIdle(t *testing.T, c *testcluster.Cluster) {
	topic := testcluster.Name(t, "")
	const P = 1000
	createTopicOn(t, c, topic, P, 1)
	cfg := fetch.NewConfig()
	cfg.MaxWait = 100 * time.Millisecond
	f, log := loggedFetcher(t, newClient(t, c), cfg)

	active, err := f.Add(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{t: t, p: active}
	const perPhase = 200
	phase := func(idle int32, from int32, want int) []sentReq {
		t.Helper()
		start := log.len()
		for i := from; i < idle+1; i++ {
			if _, err := f.Add(topic, i, 0); err != nil {
				t.Fatal(err)
			}
		}
		for range 10 {
			produceSized(t, c, topic, []int32{0}, perPhase/10, 100, 10, sarama.CompressionNone)
			r.readN(len(r.recs)+perPhase/10, time.Minute)
		}
		if len(r.recs) != want {
			t.Fatalf("read %d records; want %d", len(r.recs), want)
		}
		return log.since(start)
	}
	check := func(name string, reqs []sentReq, total int) {
		t.Helper()
		all := -1 // the first request that fetched every partition
		steady, withP0 := 0, 0
		for i, q := range reqs {
			if q.kind == fetch.KindSessionless {
				t.Errorf("%s: request %d: sessionless (%+v)", name, i, q)
			}
			if all < 0 {
				if q.fetched == total {
					all = i
				}
				continue
			}
			if q.kind != fetch.KindIncremental {
				t.Errorf("%s: request %d after the session held every partition: %+v", name, i, q)
				continue
			}
			steady++
			if q.named > 1 || q.forgotten > 1 {
				t.Errorf("%s: incremental request %d names %d partitions and forgets %d (fetches %d); want at most the active one", name, i, q.named, q.forgotten, q.fetched)
			}
			withP0 += q.named
		}
		if all < 0 {
			t.Fatalf("%s: no request fetched all %d partitions: %+v", name, total, reqs)
		}
		if steady < 5 || withP0 < 3 {
			t.Errorf("%s: %d incremental requests after the session held every partition, %d naming the active one; want more", name, steady, withP0)
		}
		t.Logf("%s: %d requests, %d incremental after all %d partitions were in the session, naming %d partitions in all", name, len(reqs), steady, total, withP0)
	}
	check("10 idle", phase(10, 1, perPhase), 11)
	check("999 idle", phase(P-1, 11, 2*perPhase), P)
	// Exactly once: offsets 0..n-1 in strictly increasing order.
	if first, last := r.recs[0].offset, r.recs[len(r.recs)-1].offset; first != 0 || last != int64(len(r.recs)-1) {
		t.Errorf("offsets %d..%d over %d records", first, last, len(r.recs))
	}
	st := f.Stats()
	t.Logf("stats: %+v", st)
	if st.Full < 1 || st.Incremental < 20 || st.SessionErrors != 0 {
		t.Errorf("stats: %+v", st)
	}
}

// TestSessionPartitionBound: a broker loop with more partitions than
// Config.MaxSessionPartitions fetches without a session, naming every
// partition; once it has that many or fewer, it opens a session (a full
// request) and goes on incrementally. Every record is read exactly once
// across the change.
func TestSessionPartitionBound(t *testing.T) {
	c := testcluster.Shared(t)
	checkLeaks(t)
	topic := testcluster.Name(t, "")
	const P, n = 4, 20
	createTopicOn(t, c, topic, P, 1)
	cfg := fetch.NewConfig()
	cfg.MaxWait = 100 * time.Millisecond
	cfg.MaxSessionPartitions = P - 1
	f, log := loggedFetcher(t, newClient(t, c), cfg)
	readers := make([]*reader, P)
	for i := range int32(P) {
		p, err := f.Add(topic, i, 0)
		if err != nil {
			t.Fatal(err)
		}
		readers[i] = &reader{t: t, p: p}
	}
	all := []int32{0, 1, 2, 3}
	produceSized(t, c, topic, all, n, 100, 10, sarama.CompressionNone)
	for _, r := range readers {
		r.readN(n, time.Minute)
	}
	// The loop may send requests while the partitions are still being
	// added (with two, under the bound, it may open a session): the
	// bound holds from the first request that fetched all P on.
	over := log.since(0)
	first := slices.IndexFunc(over, func(q sentReq) bool { return q.fetched == P })
	if first < 0 {
		t.Fatalf("no request fetched all %d partitions: %+v", P, over)
	}
	for i, q := range over[first:] {
		if q.kind != fetch.KindSessionless || q.named != q.fetched {
			t.Errorf("request %d with %d partitions: %+v; want sessionless, naming every partition", first+i, P, q)
		}
	}

	readers[P-1].p.Close()
	mark := log.len()
	for round := range 5 {
		produceSized(t, c, topic, all[:P-1], n/5, 100, 10, sarama.CompressionNone)
		for _, r := range readers[:P-1] {
			r.readN(n+(round+1)*n/5, time.Minute)
		}
	}
	under := log.since(mark)
	full, incremental := -1, 0
	for i, q := range under {
		switch {
		case q.kind == fetch.KindFull && full < 0:
			full = i
		case full >= 0 && q.kind != fetch.KindIncremental:
			t.Errorf("request %d after the session opened: %+v", i, q)
		case full >= 0:
			incremental++
		case q.kind != fetch.KindSessionless:
			t.Errorf("request %d before a session opened: %+v", i, q)
		}
	}
	if full < 0 || incremental < 2 {
		t.Errorf("with %d partitions: %d requests, the first full at %d, %d incremental after it; want a session: %+v", P-1, len(under), full, incremental, under)
	}
	for i, r := range readers[:P-1] {
		if first, last := r.recs[0].offset, r.recs[len(r.recs)-1].offset; len(r.recs) != 2*n || first != 0 || last != 2*n-1 {
			t.Errorf("partition %d: %d records, offsets %d..%d; want 0..%d once", i, len(r.recs), first, last, 2*n-1)
		}
	}
	t.Logf("%d requests over the bound, %d under it; stats %+v", len(over), len(under), f.Stats())
}

// TestSessionTopicsInterleaved: a broker answering in a fetch session lists
// partitions in its session's order, moving each partition that returned
// records to the end, so that a topic's partitions come apart and a
// response names the topic twice; the records of every entry are read
// from that response. Topics a (2 partitions) and b (1) on one broker,
// each round: a record to b/0 alone, then to a/0 alone, which makes the
// session's order a/1, b/0, a/0 whatever it was, then, while the fetcher's
// next request is held back (no fetch at the broker), one produce request
// with a record for each of the three: the request let go is answered
// a/1, b/0, a/0, topic a named twice. sarama alone keeps a topic's last
// entry only, so a/1's record waited for the next response in every
// round; read from that response, the request after it names all three
// (their offsets moved).
func TestSessionTopicsInterleaved(t *testing.T) { onEachKafka(t, testTopicsInterleaved) }

func testTopicsInterleaved(t *testing.T, c *testcluster.Cluster) {
	a, b := testcluster.Name(t, "a"), testcluster.Name(t, "b")
	createTopicOn(t, c, a, 2, 1)
	createTopicOn(t, c, b, 1, 1)
	g := newGate()
	cfg := testcluster.SaramaConfig()
	cfg.Net.Proxy.Enable, cfg.Net.Proxy.Dialer = true, g
	client, err := sarama.NewClient(c.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	fcfg := fetch.NewConfig()
	fcfg.MaxWait = 100 * time.Millisecond
	f, log := loggedFetcher(t, client, fcfg)
	type tp struct {
		topic string
		p     int32
	}
	parts := []tp{{a, 0}, {a, 1}, {b, 0}}
	readers := map[tp]*reader{}
	for _, x := range parts {
		p, err := f.Add(x.topic, x.p, 0)
		if err != nil {
			t.Fatal(err)
		}
		readers[x] = &reader{t: t, p: p}
	}
	leader, err := newClient(t, c).Leader(a, 0) // not through the gate
	if err != nil {
		t.Fatal(err)
	}
	// produce writes one record to each of ps in one produce request.
	produce := func(ps ...tp) {
		t.Helper()
		req := &sarama.ProduceRequest{Version: 7, RequiredAcks: sarama.WaitForLocal, Timeout: 10_000}
		now := time.Now()
		for _, x := range ps {
			req.AddBatch(x.topic, x.p, &sarama.RecordBatch{Version: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
				FirstTimestamp: now, MaxTimestamp: now, Records: []*sarama.Record{{Value: []byte("v")}}})
		}
		resp, err := leader.Produce(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ps {
			if blk := resp.GetBlock(x.topic, x.p); blk == nil || blk.Err != sarama.ErrNoError {
				t.Fatalf("producing to %s/%d: %+v", x.topic, x.p, blk)
			}
		}
	}
	read := func(ps ...tp) {
		t.Helper()
		for _, x := range ps {
			r := readers[x]
			r.readN(len(r.recs)+1, time.Minute)
		}
	}
	produce(parts...) // the session is open (incremental from here on)
	read(parts...)
	for round := range 4 {
		produce(tp{b, 0})
		read(tp{b, 0})
		produce(tp{a, 0})
		read(tp{a, 0})
		g.close()
		g.awaitHeld(t) // the fetcher's next request: none at the broker now
		start := log.len()
		produce(tp{a, 1}, tp{b, 0}, tp{a, 0})
		g.open()
		read(tp{a, 1}, tp{b, 0}, tp{a, 0})
		// The request after the response that brought them names those
		// whose offset moved: all three, or fewer if it brought fewer.
		var named []int
		for end := time.Now().Add(time.Minute); ; {
			named = named[:0]
			for _, q := range log.since(start) {
				if q.named > 0 {
					named = append(named, q.named)
				}
			}
			if sum(named) >= 3 {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("round %d: no request after its records: %+v", round, log.since(start))
			}
			time.Sleep(5 * time.Millisecond) // the loop's next request, which the hook hears
		}
		if named[0] != 3 {
			t.Errorf("round %d: records one response held came in responses bringing %v", round, named)
		}
	}
	for _, x := range parts {
		r := readers[x]
		if want := int64(len(r.recs) - 1); r.recs[0].offset != 0 || r.recs[len(r.recs)-1].offset != want {
			t.Errorf("%s/%d: offsets %d..%d over %d records", x.topic, x.p, r.recs[0].offset, r.recs[len(r.recs)-1].offset, len(r.recs))
		}
	}
	if st := f.Stats(); st.Incremental < 10 || st.SessionErrors != 0 {
		t.Errorf("stats: %+v", st)
	}
}

func sum(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// gate is a dialer whose connections hold their writes while it is
// closed.
type gate struct {
	mu     sync.Mutex
	cond   *sync.Cond
	closed bool
	held   int // writes waiting
}

func newGate() *gate {
	g := &gate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) Dial(network, addr string) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return gatedConn{c, g}, nil
}

func (g *gate) close() { g.set(true) }
func (g *gate) open()  { g.set(false) }

func (g *gate) set(closed bool) {
	g.mu.Lock()
	g.closed = closed
	g.mu.Unlock()
	g.cond.Broadcast()
}

// awaitHeld waits until a write is held.
func (g *gate) awaitHeld(t *testing.T) {
	t.Helper()
	timer := time.AfterFunc(time.Minute, g.cond.Broadcast)
	defer timer.Stop()
	end := time.Now().Add(time.Minute)
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.held == 0 {
		if time.Now().After(end) {
			t.Fatal("no write held by the gate")
		}
		g.cond.Wait()
	}
}

type gatedConn struct {
	net.Conn
	g *gate
}

func (c gatedConn) Write(p []byte) (int, error) {
	g := c.g
	g.mu.Lock()
	for g.closed {
		g.held++
		g.cond.Broadcast()
		g.cond.Wait()
		g.held--
	}
	g.mu.Unlock()
	return c.Conn.Write(p)
}

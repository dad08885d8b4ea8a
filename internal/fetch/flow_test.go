package fetch_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestSlowPartition: four partitions led by one broker, each pre-filled
// with 2,000 messages; the consumer of partition 0 takes nothing while
// the three others read everything. They finish; partition 0 holds only
// what filled its buffer (at most PartitionBuffer Records of about
// PartitionMaxBytes, from offset 0; forgotten by its fetch session), and
// once taken it is read to the end too.
func TestSlowPartition(t *testing.T) {
	c, client := sharedClient(t)
	topic := testcluster.Name(t, "")
	const P, N, size = 4, 2000, 200
	createTopicOn(t, c, topic, P, c.BrokerIDs()[0])
	produceSized(t, c, topic, []int32{0, 1, 2, 3}, N, size, 20, sarama.CompressionNone)
	cfg := fetch.NewConfig()
	cfg.PartitionMaxBytes = 16 << 10
	f := newFetcher(t, client, cfg)
	var ps []*fetch.Partition
	for part := range int32(P) {
		p, err := f.Add(topic, part, 0)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	start := time.Now()
	var wg sync.WaitGroup
	readers := make([]*reader, P)
	for i := 1; i < P; i++ {
		readers[i] = &reader{t: t, p: ps[i]}
		wg.Go(func() { readers[i].readN(N, time.Minute) })
	}
	wg.Wait()
	t.Logf("three partitions read while the fourth is not taken: %v", time.Since(start))
	for i := 1; i < P; i++ {
		if len(readers[i].recs) != N || readers[i].recs[N-1].offset != N-1 {
			t.Fatalf("partition %d: %d records", i, len(readers[i].recs))
		}
	}
	// Partition 0 holds what it fetched before its buffer filled, no more.
	var held []*fetch.Records
	buffered := 0
	for {
		recs, err := ps[0].Poll()
		if err != nil {
			t.Fatal(err)
		}
		if recs == nil {
			break
		}
		held = append(held, recs)
		buffered += recs.Len()
	}
	if len(held) == 0 || len(held) > cfg.PartitionBuffer || buffered*size > cfg.PartitionBuffer*2*int(cfg.PartitionMaxBytes) {
		t.Fatalf("partition 0 buffered %d Records, %d records; want 1 to %d of at most ~%d bytes each", len(held), buffered, cfg.PartitionBuffer, cfg.PartitionMaxBytes)
	}
	next := int64(0)
	for _, recs := range held {
		for r := range recs.All() {
			if r.Offset != next {
				t.Fatalf("partition 0: buffered offset %d, want %d", r.Offset, next)
			}
			next++
		}
	}
	t.Logf("partition 0 held %d Records (%d records) while not taken", len(held), buffered)
	// In the fetch session, the held partition was forgotten (left out,
	// it would have been fetched still).
	if st := f.Stats(); st.Incremental == 0 || st.Forgotten == 0 {
		t.Errorf("fetch session: %d incremental requests forgot %d partitions; want partition 0 forgotten", st.Incremental, st.Forgotten)
	}
	recs := held[len(held)-1]
	r0 := &reader{t: t, p: ps[0]}
	r0.readN(N-buffered, time.Minute)
	if r0.recs[0].offset != recs.NextOffset || r0.recs[len(r0.recs)-1].offset != N-1 {
		t.Fatalf("partition 0 after the take: from %d to %d, want %d to %d", r0.recs[0].offset, r0.recs[len(r0.recs)-1].offset, recs.NextOffset, N-1)
	}
}

// TestFairShare: eight partitions on one broker, responses limited to two
// partitions' worth (MaxResponseSize 2 × PartitionMaxBytes), partition 0
// holding five times the data of the others. Read by eight prompt
// consumers: when the first of partitions 1-7 is done, each of the others
// has read at least 30% of its messages (no partition starves).
func TestFairShare(t *testing.T) {
	c, client := sharedClient(t)
	topic := testcluster.Name(t, "")
	const P, N, size = 8, 600, 500
	createTopicOn(t, c, topic, P, c.BrokerIDs()[1])
	produceSized(t, c, topic, []int32{0}, 4*N, size, 20, sarama.CompressionNone)
	produceSized(t, c, topic, []int32{0, 1, 2, 3, 4, 5, 6, 7}, N, size, 20, sarama.CompressionNone)
	cfg := fetch.NewConfig()
	cfg.PartitionMaxBytes = 16 << 10
	cfg.MaxResponseSize = 32 << 10
	f := newFetcher(t, client, cfg)
	var progress [P]atomic.Int64
	var firstDone atomic.Bool
	var snapshot [P]int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for part := range int32(P) {
		p, err := f.Add(topic, part, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := N
		if part == 0 {
			want = 5 * N
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			n := 0
			for n < want {
				recs, err := p.Take(ctx)
				if err != nil {
					t.Errorf("partition %d after %d: %v", part, n, err)
					return
				}
				n += recs.Len()
				progress[part].Store(int64(n))
			}
			if part != 0 && firstDone.CompareAndSwap(false, true) {
				mu.Lock()
				for i := range snapshot {
					snapshot[i] = progress[i].Load()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("progress when the first of partitions 1-7 finished: %v (of %d; partition 0 of %d)", snapshot, N, 5*N)
	for i := 1; i < P; i++ {
		if snapshot[i] < N*3/10 {
			t.Errorf("partition %d had read %d of %d: starved", i, snapshot[i], N)
		}
	}
	if snapshot[0] < N*3/10 {
		t.Errorf("partition 0 had read %d: starved", snapshot[0])
	}
}

// TestAddCloseWhileFetching: partition A of a topic is read while a
// producer keeps writing to it and other partitions led by the same
// broker are added and closed again and again: A loses nothing. Then the
// topic gains two partitions, which are added and read.
func TestAddCloseWhileFetching(t *testing.T) {
	c, client := sharedClient(t)
	topic := testcluster.Name(t, "a")
	other := testcluster.Name(t, "other")
	broker := c.BrokerIDs()[2]
	createTopicOn(t, c, topic, 2, broker)
	createTopicOn(t, c, other, 8, broker)
	produceSized(t, c, other, []int32{0, 1, 2, 3, 4, 5, 6, 7}, 200, 100, 50, sarama.CompressionNone)
	f := newFetcher(t, client, fetch.NewConfig())
	a, err := f.Add(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	const N = 1500
	prodDone := make(chan error, 1)
	go func() {
		cfg := testcluster.SaramaConfig()
		prod, err := sarama.NewSyncProducer(c.Addrs(), cfg)
		if err != nil {
			prodDone <- err
			return
		}
		defer prod.Close()
		for i := range N / 50 {
			msgs := make([]*sarama.ProducerMessage, 50)
			for j := range msgs {
				msgs[j] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(testcluster.Value(topic, i*50+j))}
			}
			if err := prod.SendMessages(msgs); err != nil {
				prodDone <- err
				return
			}
		}
		prodDone <- nil
	}()
	churnDone := make(chan struct{})
	var churns int
	go func() {
		defer close(churnDone)
		for round := 0; round < 30; round++ {
			var ps []*fetch.Partition
			for part := range int32(8) {
				p, err := f.Add(other, part, int64(round))
				if err != nil {
					t.Errorf("Add %d: %v", part, err)
					return
				}
				ps = append(ps, p)
			}
			// read one Records of one of them, close all
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			recs, err := ps[round%8].Take(ctx)
			cancel()
			if err != nil {
				t.Errorf("round %d: %v", round, err)
				return
			}
			for r := range recs.All() {
				if r.Offset != int64(round) {
					t.Errorf("round %d: first offset %d", round, r.Offset)
				}
				break
			}
			for _, p := range ps {
				p.Close()
			}
			churns++
		}
	}()
	ra := &reader{t: t, p: a}
	ra.readN(N, 2*time.Minute)
	<-churnDone
	if err := <-prodDone; err != nil {
		t.Fatal(err)
	}
	for i, g := range ra.recs {
		if g.offset != int64(i) || g.value != testcluster.Value(topic, i) {
			t.Fatalf("A record %d: %+v", i, g)
		}
	}
	t.Logf("A read %d records in %d takes during %d add/close rounds of 8 partitions", len(ra.recs), ra.takes, churns)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.AddPartitions(ctx, topic, 4); err != nil {
		t.Fatal(err)
	}
	testcluster.MustProduce(t, c, topic, 4, 0, 40)
	for part := int32(2); part < 4; part++ {
		p, err := f.Add(topic, part, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := &reader{t: t, p: p}
		r.readN(10, time.Minute)
		if r.recs[0].value != testcluster.Value(topic, int(part)) {
			t.Fatalf("new partition %d: first %+v", part, r.recs[0])
		}
	}
}

// TestOversized: messages of 200 KB, partitions asked for 16 KB each (two
// partitions on one broker, so that one of them is not first in the
// response and gets only the start of its batch): everything is read,
// each message whole.
func TestOversized(t *testing.T) {
	c, client := sharedClient(t)
	topic := testcluster.Name(t, "")
	const N, size = 6, 200 << 10
	createTopicOn(t, c, topic, 2, c.BrokerIDs()[0])
	produceSized(t, c, topic, []int32{0, 1}, N, size, 1, sarama.CompressionNone)
	cfg := fetch.NewConfig()
	cfg.PartitionMaxBytes = 16 << 10
	f := newFetcher(t, client, cfg)
	var wg sync.WaitGroup
	for part := range int32(2) {
		p, err := f.Add(topic, part, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := &reader{t: t, p: p}
		wg.Go(func() {
			r.readN(N, time.Minute)
			for i, g := range r.recs {
				if g.offset != int64(i) || len(g.value) != size {
					t.Errorf("partition %d record %d: offset %d, %d bytes", part, i, g.offset, len(g.value))
				}
			}
		})
	}
	wg.Wait()
}

// TestHeldNotBehindLongPoll: partitions A (200 KB to read, in 16 KB
// shares, buffer of one) and B (caught up) on one broker, MaxWait 5 s. A's
// consumer takes a little after each share arrives, so that A is often
// held (full) when the loop builds a request, which then long-polls for B
// alone; the short wait of such requests keeps A from waiting 5 s per
// share: A is read in well under two long polls.
func TestHeldNotBehindLongPoll(t *testing.T) {
	c, client := sharedClient(t)
	topic := testcluster.Name(t, "")
	const N, size = 1000, 200
	createTopicOn(t, c, topic, 2, c.BrokerIDs()[1])
	produceSized(t, c, topic, []int32{0}, N, size, 50, sarama.CompressionNone)
	cfg := fetch.NewConfig()
	cfg.PartitionMaxBytes = 16 << 10
	cfg.PartitionBuffer = 1
	cfg.MaxWait = 5 * time.Second
	f := newFetcher(t, client, cfg)
	if _, err := f.Add(topic, 1, 0); err != nil { // B: empty, long-polled
		t.Fatal(err)
	}
	a, err := f.Add(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	n, takes := 0, 0
	for n < N {
		recs, err := a.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += recs.Len()
		takes++
		time.Sleep(2 * time.Millisecond) // the consumer's work on a share
	}
	d := time.Since(start)
	t.Logf("A: %d records in %d takes in %v with B long-polled (MaxWait %v)", n, takes, d, cfg.MaxWait)
	if d > 2*cfg.MaxWait {
		t.Fatalf("A took %v: its shares waited behind long polls", d)
	}
}

// TestGoroutines: 64 partitions spread over the 3 brokers, each read once:
// the fetcher runs its router, one loop per broker and sarama's receiver
// of each loop's connection, whatever the number of partitions (no
// goroutine per partition).
func TestGoroutines(t *testing.T) {
	c, client := sharedClient(t)
	topic := testcluster.Name(t, "")
	const P = 64
	testcluster.MustCreateTopic(t, c, topic, P, 1)
	testcluster.MustProduce(t, c, topic, P, 0, 2*P)
	if _, err := client.Partitions(topic); err != nil { // the client's own connections
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	f := newFetcher(t, client, fetch.NewConfig())
	for part := range int32(P) {
		p, err := f.Add(topic, part, 0)
		if err != nil {
			t.Fatal(err)
		}
		(&reader{t: t, p: p}).readN(2, 30*time.Second)
	}
	brokers := len(c.BrokerIDs())
	extra := runtime.NumGoroutine() - before
	t.Logf("%d partitions over %d brokers: %d goroutines more", P, brokers, extra)
	if extra > 1+2*brokers+2 {
		t.Fatalf("%d goroutines for %d partitions over %d brokers; want at most %d", extra, P, brokers, 1+2*brokers+2)
	}
}

// TestClosedPartitionsNotKept: a Fetcher keeps no closed Partition alive
// (nor what its consumer hangs on it, as a partition manager's wake-up
// through Notify): its broker loops reuse their request lists, and once
// they shrank, what the old entries pointed at must be gone. Of 64
// partitions read, 60 are closed; after the loops have made requests
// since, a collection frees them.
func TestClosedPartitionsNotKept(t *testing.T) {
	c, client := sharedClient(t)
	topic := testcluster.Name(t, "")
	const P, keep = 64, 4
	testcluster.MustCreateTopic(t, c, topic, P, 1)
	testcluster.MustProduce(t, c, topic, P, 0, 2*P)
	cfg := fetch.NewConfig()
	cfg.IdleWait = cfg.MaxWait // requests keep coming while idle
	f := newFetcher(t, client, cfg)
	var gone []weak.Pointer[fetch.Partition]
	var kept []*fetch.Partition
	for part := range int32(P) {
		p, err := f.Add(topic, part, 0)
		if err != nil {
			t.Fatal(err)
		}
		(&reader{t: t, p: p}).readN(2, 30*time.Second)
		if part < keep {
			kept = append(kept, p)
			continue
		}
		p.Notify(func() {})
		p.Close()
		gone = append(gone, weak.Make(p))
	}
	alive := func() int {
		runtime.GC()
		n := 0
		for _, w := range gone {
			if w.Value() != nil {
				n++
			}
		}
		return n
	}
	n := alive()
	start := time.Now()
	testcluster.Poll(30*time.Second, 100*time.Millisecond, func() bool { n = alive(); return n == 0 })
	t.Logf("all freed after %v", time.Since(start))
	if n != 0 {
		t.Errorf("%d of %d closed partitions still alive", n, len(gone))
	}
	runtime.KeepAlive(kept)
}

package fetch_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/leadercache"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// newIDClient returns a client of c that knows topic ids (the lean
// metadata cache a member uses), closed at the end of the test.
func newIDClient(t *testing.T, c *testcluster.Cluster) sarama.Client {
	t.Helper()
	inner, err := sarama.NewClient(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	lc, err := leadercache.New(inner, c.Addrs())
	if err != nil {
		_ = inner.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lc.Close() })
	return lc
}

// TestTopicIDs: over a client that knows topic ids (Kafka 3.9 and 4.x),
// requests name topics by id (Fetch v13) and keep their session above
// Config.MaxSessionPartitions (the bound is for sessions by name); every
// record is read once, from topics named alike. A topic deleted and
// created again under its name (a new id) is fetched by its new id once
// its partitions are set back to 0: the old id's UNKNOWN_TOPIC_ID leads
// to a metadata refresh, not to a loop stuck on it.
func TestTopicIDs(t *testing.T) { onEachKafka(t, testTopicIDs) }

func testTopicIDs(t *testing.T, c *testcluster.Cluster) {
	base := testcluster.Name(t, "")
	const T, P, n = 3, 4, 20
	topics := make([]string, T)
	for i := range topics {
		topics[i] = fmt.Sprintf("%s-%d", base, i)
		createTopicOn(t, c, topics[i], P, 1)
	}
	cfg := fetch.NewConfig()
	cfg.MaxWait = 100 * time.Millisecond
	cfg.RetryBackoff = 100 * time.Millisecond
	cfg.MaxSessionPartitions = 2 // far below the loop's T × P: by name, no session
	f, log := loggedFetcher(t, newIDClient(t, c), cfg)
	var readers []*reader
	for _, topic := range topics {
		for p := range int32(P) {
			part, err := f.Add(topic, p, 0)
			if err != nil {
				t.Fatal(err)
			}
			readers = append(readers, &reader{t: t, p: part})
		}
	}
	parts := []int32{0, 1, 2, 3}
	for _, topic := range topics {
		produceSized(t, c, topic, parts, n, 100, 10, sarama.CompressionNone)
	}
	for _, r := range readers {
		r.readN(n, time.Minute)
	}
	for _, r := range readers {
		if first, last := r.recs[0].offset, r.recs[len(r.recs)-1].offset; len(r.recs) != n || first != 0 || last != n-1 {
			t.Errorf("%s/%d: %d records, offsets %d..%d; want 0..%d once", r.p.Topic(), r.p.ID(), len(r.recs), first, last, n-1)
		}
	}
	reqs := log.since(0)
	all := slices.IndexFunc(reqs, func(q sentReq) bool { return q.fetched == T*P })
	if all < 0 {
		t.Fatalf("no request fetched all %d partitions: %+v", T*P, reqs)
	}
	for i, q := range reqs[all:] {
		if q.kind == fetch.KindSessionless {
			t.Errorf("request %d with %d partitions over a bound of %d: %+v; want a session (topics by id)", all+i, q.fetched, cfg.MaxSessionPartitions, q)
		}
	}
	// Every request by topic id: the counters agree once no request is
	// being counted (a request's kind is counted after its topic ids, and
	// the fetcher keeps polling meanwhile); one sent otherwise keeps them
	// apart for good.
	var st fetch.Stats
	testcluster.Await(t, 10*time.Second, 5*time.Millisecond, "every request counted by topic id", func() bool {
		st = f.Stats()
		return st.ByTopicID == st.Sessionless+st.Full+st.Incremental
	})
	if st.Incremental == 0 || st.SessionErrors != 0 {
		t.Fatalf("stats %+v after %d requests: want incremental ones among them, no session error", st, len(reqs))
	}
	t.Logf("%d requests; stats %+v", len(reqs), st)

	// The first topic deleted and created again: a new id, and a new log,
	// whose epoch 0 may end below the old position (a truncation, as the
	// fetcher sees it) or reach past it. A consumer starts it over: from 0,
	// it is read whole, by its new id.
	gone := topics[0]
	if err := c.DeleteTopic(gone); err != nil {
		t.Fatal(err)
	}
	recreateTopicOn(t, c, gone, P, 1)
	for i, r := range readers[:P] {
		if err := r.p.SetOffset(0); err != nil {
			t.Fatal(err)
		}
		readers[i] = &reader{t: t, p: r.p}
	}
	before := f.Stats().ByTopicID
	produceSized(t, c, gone, parts, 2*n, 100, 10, sarama.CompressionNone)
	for _, r := range readers[:P] {
		r.readN(2*n, time.Minute)
		if first, last := r.recs[0].offset, r.recs[len(r.recs)-1].offset; len(r.recs) != 2*n || first != 0 || last != 2*n-1 {
			t.Errorf("%s/%d created again: %d records, offsets %d..%d; want 0..%d once", r.p.Topic(), r.p.ID(), len(r.recs), first, last, 2*n-1)
		}
	}
	if after := f.Stats().ByTopicID; after == before {
		t.Errorf("no request by topic id after the topic was created again (stats %+v)", f.Stats())
	}
}

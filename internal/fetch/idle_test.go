package fetch_test

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestIdleWait: partitions A and B of one broker, MaxWait 100 ms,
// IdleWait one minute (longer than any wait below). With A alone and
// idle, the loop stops asking every 100 ms (it long-polls for the idle
// wait). Records written to A then come at once (the broker answers the
// long poll). Once idle again, adding B, which holds records, and later
// seeking B back to 0 each cut the long poll short (Stats.Cuts): B's
// records come, in order and once per read, where without the cut they
// would wait out the minute.
func TestIdleWait(t *testing.T) {
	c := testcluster.Shared(t)
	checkLeaks(t)
	client := newClient(t, c)
	topic := testcluster.Name(t, "")
	createTopicOn(t, c, topic, 2, c.BrokerIDs()[0])
	cfg := fetch.NewConfig()
	cfg.MaxWait = 100 * time.Millisecond
	cfg.IdleWait = time.Minute
	f, log := loggedFetcher(t, client, cfg)
	a, err := f.Add(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Idle: a request in flight for a second and more while MaxWait is
	// 100 ms.
	awaitIdle := func(what string) {
		t.Helper()
		n, since := -1, time.Now()
		testcluster.Await(t, 30*time.Second, 50*time.Millisecond, what, func() bool {
			if m := log.len(); m != n {
				n, since = m, time.Now()
			}
			return n > 0 && time.Since(since) > time.Second
		})
	}
	awaitIdle("the loop long-polls A alone for the idle wait")
	before := log.len()

	produceSized(t, c, topic, []int32{0}, 10, 100, 10, sarama.CompressionNone)
	ra := &reader{t: t, p: a}
	ra.readN(10, 30*time.Second)
	if st := f.Stats(); st.Cuts != 0 {
		t.Fatalf("records of an idle partition cut the long poll: %+v", st)
	}
	// The loop asks again once it handed the records over, which may be
	// just after the reader took them.
	testcluster.Await(t, 10*time.Second, 10*time.Millisecond, "a request after the records", func() bool {
		return log.len() > before
	})

	produceSized(t, c, topic, []int32{1}, 20, 100, 20, sarama.CompressionNone)
	awaitIdle("the loop long-polls A again")
	b, err := f.Add(topic, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	rb := &reader{t: t, p: b}
	rb.readN(20, 30*time.Second)
	if st := f.Stats(); st.Cuts != 1 {
		t.Fatalf("after the Add: %d cuts; want 1 (%+v)", st.Cuts, st)
	}

	awaitIdle("the loop long-polls A and B")
	if err := b.SetOffset(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs, err := b.Take(ctx)
	if err != nil {
		t.Fatalf("Take after the seek: %v", err)
	}
	first := int64(-1)
	for r := range recs.All() {
		first = r.Offset
		break
	}
	if first != 0 {
		t.Fatalf("after the seek to 0: first record at %d (%d records)", first, recs.Len())
	}
	if st := f.Stats(); st.Cuts != 2 || st.Full < 3 {
		t.Fatalf("after the seek: %+v; want 2 cuts, each followed by a full request", st)
	}
	// A goes on after the cuts: records written now are read once, in order.
	produceSized(t, c, topic, []int32{0}, 10, 100, 10, sarama.CompressionNone)
	ra.readN(20, 30*time.Second)
}

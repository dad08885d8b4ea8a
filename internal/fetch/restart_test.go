package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestBrokerRestart runs a cluster of its own (2 brokers, topic of 4
// partitions with replication 2) under a steady producer while the
// fetcher reads every partition: broker 1 is stopped (controlled
// shutdown) and started again, then broker 2 is killed (SIGKILL) and
// started again. Every partition follows its new leader (reports wrapping
// ErrFetch, no stop): each is read to its high watermark with no offset
// missing or repeated, and every acknowledged message is among them.
// The fetch sessions the loops hold are lost with their brokers and
// opened again with a full request.
func TestBrokerRestart(t *testing.T) {
	c, topic := ownTwoBrokers(t)
	const P = 4
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	testcluster.MustCreateTopic(t, c, topic, P, 2)
	client, f := failoverFetcher(t, c, fetch.NewConfig())

	// Producer: one message per partition at a time until stopped.
	var acked sync.Map // value -> partition
	var produced atomic.Int64
	stopProd := make(chan struct{})
	prodDone := make(chan struct{})
	var stopOnce sync.Once
	stopProducer := func() {
		stopOnce.Do(func() { close(stopProd) })
		<-prodDone
	}
	t.Cleanup(stopProducer) // before the cluster stops, also on failure
	go func() {
		defer close(prodDone)
		// Not idempotent: after a broker's crash an idempotent producer can
		// stay stuck on sequence errors. Duplicates are fine here: the log
		// is the reference. On an error the producer is made anew.
		pcfg := testcluster.SaramaConfig()
		pcfg.Producer.Idempotent = false
		pcfg.Producer.Retry.Max = 20
		pcfg.Producer.Retry.Backoff = 100 * time.Millisecond
		var prod sarama.SyncProducer
		defer func() {
			if prod != nil {
				_ = prod.Close()
			}
		}()
		for i := 0; ; i++ {
			select {
			case <-stopProd:
				return
			default:
			}
			if prod == nil {
				var err error
				if prod, err = sarama.NewSyncProducer(c.Addrs(), pcfg); err != nil {
					prod = nil
					select {
					case <-stopProd:
						return
					case <-time.After(200 * time.Millisecond): // retry pace
					}
					continue
				}
			}
			v := testcluster.Value(topic, i)
			part := int32(i % P)
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.StringEncoder(v)}); err != nil {
				_ = prod.Close() // not acked: may or may not be in the log
				prod = nil
				continue
			}
			acked.Store(v, part)
			produced.Add(1)
			if i%50 == 49 {
				time.Sleep(5 * time.Millisecond) // a steady rate, not a flood
			}
		}
	}()

	type state struct {
		mu      sync.Mutex
		recs    []got
		reports atomic.Int64
	}
	states := make([]*state, P)
	readCtx, stopRead := context.WithCancel(context.Background())
	var rwg sync.WaitGroup
	for part := range int32(P) {
		p, err := f.Add(topic, part, 0)
		if err != nil {
			t.Fatal(err)
		}
		st := &state{}
		states[part] = st
		rwg.Go(func() {
			for {
				recs, err := p.Take(readCtx)
				switch {
				case errors.Is(err, fetch.ErrFetch):
					st.reports.Add(1)
					continue
				case errors.Is(err, context.Canceled):
					return
				case err != nil:
					t.Errorf("partition %d: %v", part, err)
					return
				}
				st.mu.Lock()
				for r := range recs.All() {
					st.recs = append(st.recs, got{offset: r.Offset, value: string(r.Value)})
				}
				st.mu.Unlock()
			}
		})
	}
	progress := func() string {
		s := fmt.Sprintf("%d acknowledged; read", produced.Load())
		for part, st := range states {
			st.mu.Lock()
			s += fmt.Sprintf(" %d:%d", part, len(st.recs))
			st.mu.Unlock()
		}
		return s
	}
	waitProduced := func(n int64) {
		t.Helper()
		if !testcluster.Poll(3*time.Minute, 20*time.Millisecond, func() bool { return produced.Load() >= n }) {
			t.Fatalf("timed out waiting for %d acknowledged messages: %s", n, progress())
		}
		t.Logf("progress: %s", progress())
	}
	// bounce stops broker id (stop: StopBroker or KillBroker) and starts
	// it again, with 200 more messages acknowledged after each step.
	bounce := func(how string, stop func(int32) error, id int32) {
		t.Helper()
		t.Logf("%s broker %d", how, id)
		if err := stop(id); err != nil {
			t.Fatal(err)
		}
		waitProduced(produced.Load() + 200)
		if err := c.StartBroker(ctx, id); err != nil {
			t.Fatal(err)
		}
		waitProduced(produced.Load() + 200)
	}
	waitProduced(200)
	before := f.Stats()
	bounce("stopping", c.StopBroker, 1)
	// Broker 1 back in every partition's ISR first: killed before that,
	// broker 2 would take the partitions it leads offline (no unclean
	// election) and nothing could be produced to them until it is back.
	isrFull := testcluster.Poll(3*time.Minute, 100*time.Millisecond, func() bool {
		if err := client.RefreshMetadata(topic); err != nil {
			return false
		}
		for part := int32(0); part < P; part++ {
			if isr, err := client.InSyncReplicas(topic, part); err != nil || len(isr) < 2 {
				return false
			}
		}
		return true
	})
	if !isrFull {
		t.Fatal("broker 1 did not rejoin every partition's ISR")
	}
	bounce("killing", c.KillBroker, 2)
	stopProducer()

	hwm := testcluster.MustHighWaterMarks(t, c, topic)
	caughtUp := testcluster.Poll(2*time.Minute, 20*time.Millisecond, func() bool {
		for part, st := range states {
			st.mu.Lock()
			n := len(st.recs)
			caught := n > 0 && st.recs[n-1].offset >= hwm[int32(part)]-1
			st.mu.Unlock()
			if !caught {
				return false
			}
		}
		return true
	})
	if !caughtUp {
		t.Fatalf("timed out waiting for every partition read to its high watermark %v: %s", hwm, progress())
	}
	stopRead()
	rwg.Wait()
	var reports int64
	seen := map[string]bool{}
	for part, st := range states {
		reports += st.reports.Load()
		for i, g := range st.recs {
			if g.offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d", part, i, g.offset)
			}
			seen[g.value] = true
		}
		if int64(len(st.recs)) != hwm[int32(part)] {
			t.Errorf("partition %d: read %d, high watermark %d", part, len(st.recs), hwm[int32(part)])
		}
	}
	missing := 0
	acked.Range(func(k, _ any) bool {
		if !seen[k.(string)] {
			missing++
		}
		return true
	})
	if missing > 0 {
		t.Errorf("%d acknowledged messages not read", missing)
	}
	if reports == 0 {
		t.Error("no leader move or broker loss reported")
	}
	t.Logf("%d messages acknowledged, %v high watermarks, %d reports", produced.Load(), hwm, reports)
	// Fetch sessions: lost with each broker and opened again (a full
	// request), incremental in between.
	after := f.Stats()
	t.Logf("stats before the restarts: %+v; after: %+v", before, after)
	if before.Full < 1 || before.Incremental < 1 || after.Full < before.Full+2 || after.Incremental <= before.Incremental {
		t.Errorf("fetch sessions: before the restarts %d full, %d incremental requests; after %d, %d", before.Full, before.Incremental, after.Full, after.Incremental)
	}
}

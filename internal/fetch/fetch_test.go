package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestCodecs writes batches compressed with each codec sarama reads
// (and uncompressed) with sarama's SyncProducer, and reads them back: every
// message exactly once, in order, with its key, value, headers and
// timestamp; starting in the middle of a compressed batch yields nothing
// before the start offset.
//
// Both ways of reading record batches: the fetcher's own (by default) and
// sarama's decoder (Config.SaramaDecodes), each on topics of its own.
func TestCodecs(t *testing.T) {
	for _, sar := range []bool{false, true} {
		t.Run(fmt.Sprintf("sarama=%v", sar), func(t *testing.T) {
			cfg := fetch.NewConfig()
			cfg.SaramaDecodes = sar
			testCodecs(t, cfg)
		})
	}
}

func testCodecs(t *testing.T, fcfg fetch.Config) {
	c, client := sharedClient(t)
	f := newFetcher(t, client, fcfg)
	defer func() {
		if own := f.Stats().OwnShares; (own > 0) == fcfg.SaramaDecodes {
			t.Errorf("SaramaDecodes %v: %d shares read by the fetcher itself", fcfg.SaramaDecodes, own)
		}
	}()
	const P, batches, per = 2, 3, 40
	for _, codec := range []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP,
		sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD} {
		t.Run(codec.String(), func(t *testing.T) {
			topic := testcluster.Name(t, codec.String())
			testcluster.MustCreateTopic(t, c, topic, P, 1)
			cfg := testcluster.SaramaConfig()
			cfg.Producer.Compression = codec
			prod, err := sarama.NewSyncProducer(c.Addrs(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now().Truncate(time.Millisecond)
			for part := int32(0); part < P; part++ {
				for b := range batches {
					msgs := make([]*sarama.ProducerMessage, per)
					for i := range msgs {
						n := b*per + i
						msgs[i] = &sarama.ProducerMessage{
							Topic: topic, Partition: part,
							Key:     sarama.StringEncoder(fmt.Sprintf("k-%d-%d", part, n)),
							Value:   sarama.StringEncoder(fmt.Sprintf("v-%d-%d-%s", part, n, codec)),
							Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: []byte(fmt.Sprint(n))}},
						}
					}
					if err := prod.SendMessages(msgs); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := prod.Close(); err != nil {
				t.Fatal(err)
			}
			for part := int32(0); part < P; part++ {
				p, err := f.Add(topic, part, 0)
				if err != nil {
					t.Fatal(err)
				}
				r := &reader{t: t, p: p}
				r.readN(batches*per, 30*time.Second)
				for n, g := range r.recs {
					if g.offset != int64(n) || g.key != fmt.Sprintf("k-%d-%d", part, n) || g.value != fmt.Sprintf("v-%d-%d-%s", part, n, codec) {
						t.Fatalf("partition %d record %d: %+v", part, n, g)
					}
					if len(g.headers) != 1 || string(g.headers[0].Key) != "h" || string(g.headers[0].Value) != fmt.Sprint(n) {
						t.Fatalf("partition %d record %d: headers %v", part, n, g.headers)
					}
					if g.ts.Before(start) || g.ts.After(time.Now()) {
						t.Fatalf("partition %d record %d: timestamp %v not since %v", part, n, g.ts, start)
					}
				}
				// Mid-batch: the batch holding offset 57 starts at 40.
				if err := p.SetOffset(57); err != nil {
					t.Fatal(err)
				}
				r2 := &reader{t: t, p: p}
				r2.readN(batches*per-57, 30*time.Second)
				if r2.recs[0].offset != 57 || len(r2.recs) != batches*per-57 {
					t.Fatalf("partition %d from 57: first %d, %d records", part, r2.recs[0].offset, len(r2.recs))
				}
				p.Close()
			}
		})
	}
}

// TestOffsetOutOfRange: a fetch beyond the log end stops the partition
// with ErrOffsetOutOfRange (again on every Take) until SetOffset, after
// which it is read from there; so does a fetch below the log start after
// records were deleted (as retention does).
func TestOffsetOutOfRange(t *testing.T) {
	c, client := sharedClient(t)
	f := newFetcher(t, client, fetch.NewConfig())
	topic := testcluster.Name(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	testcluster.MustCreateTopic(t, c, topic, 1, 1)
	testcluster.MustProduce(t, c, topic, 1, 0, 10)
	p, err := f.Add(topic, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		recs, err := p.Take(ctx)
		for errors.Is(err, fetch.ErrFetch) { // a report while the leader is found
			recs, err = p.Take(ctx)
		}
		if !errors.Is(err, fetch.ErrOffsetOutOfRange) || recs != nil {
			t.Fatalf("Take: %v, %v; want ErrOffsetOutOfRange", recs, err)
		}
	}
	if err := p.SetOffset(3); err != nil {
		t.Fatal(err)
	}
	r := &reader{t: t, p: p}
	r.readN(7, 30*time.Second)
	if r.recs[0].offset != 3 || r.recs[0].value != testcluster.Value(topic, 3) {
		t.Fatalf("after SetOffset(3): %+v", r.recs[0])
	}
	// Below the log start, as after retention: records before 6 deleted.
	admin, err := sarama.NewClusterAdmin(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.DeleteRecords(topic, map[int32]int64{0: 6}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetOffset(2); err != nil {
		t.Fatal(err)
	}
	if recs, err := p.Take(ctx); !errors.Is(err, fetch.ErrOffsetOutOfRange) {
		t.Fatalf("Take below the log start: %v, %v; want ErrOffsetOutOfRange", recs, err)
	}
	if err := p.SetOffset(6); err != nil {
		t.Fatal(err)
	}
	r = &reader{t: t, p: p}
	r.readN(4, 30*time.Second)
	if r.recs[0].offset != 6 || r.last.LogStartOffset != 6 {
		t.Fatalf("from the new log start: first offset %d, log start %d", r.recs[0].offset, r.last.LogStartOffset)
	}
}

// TestLifecycle: Add rejects a partition added twice and a negative
// offset; a closed partition can be added again; Close cuts a long poll
// short, is idempotent, and leaves Take, Poll and Add with ErrClosed and
// no goroutine behind.
func TestLifecycle(t *testing.T) {
	c, client := sharedClient(t)
	cfg := fetch.NewConfig()
	cfg.MaxWait = 10 * time.Second // a long poll Close must not wait for
	f, err := fetch.New(client, cfg, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	topic := testcluster.Name(t, "")
	testcluster.MustCreateTopic(t, c, topic, 2, 1)
	testcluster.MustProduce(t, c, topic, 2, 0, 4)
	p0, err := f.Add(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Add(topic, 0, 0); !errors.Is(err, fetch.ErrExists) {
		t.Fatalf("second Add: %v, want ErrExists", err)
	}
	if _, err := f.Add(topic, 1, -2); !errors.Is(err, fetch.ErrConfig) {
		t.Fatalf("Add at -2: %v, want ErrConfig", err)
	}
	(&reader{t: t, p: p0}).readN(2, 30*time.Second)
	p0.Close()
	p0.Close()
	if _, err := p0.Poll(); !errors.Is(err, fetch.ErrClosed) {
		t.Fatalf("Poll after Close: %v", err)
	}
	p0, err = f.Add(topic, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{t: t, p: p0}
	r.readN(1, 30*time.Second)
	if r.recs[0].offset != 1 {
		t.Fatalf("re-added at 1: first offset %d", r.recs[0].offset)
	}
	// Both partitions caught up: the loop long-polls (10 s) now.
	p1, err := f.Add(topic, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	(&reader{t: t, p: p1}).readN(0, time.Second)
	done := make(chan error, 1)
	go func() {
		_, err := p1.Take(context.Background())
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // let the long poll start: nothing to await
	start := time.Now()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with a 10 s long poll under way", d)
	}
	t.Logf("Close during a long poll: %v", time.Since(start))
	if err := <-done; !errors.Is(err, fetch.ErrClosed) {
		t.Fatalf("Take under way at Close: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Add(topic, 1, 0); !errors.Is(err, fetch.ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if _, err := p0.Take(context.Background()); !errors.Is(err, fetch.ErrClosed) {
		t.Fatalf("Take after Close: %v", err)
	}
}

// TestNotify: a Partition's Notify function is called when records come
// and when it closes, and no more once taken back.
func TestNotify(t *testing.T) {
	c, client := sharedClient(t)
	f, err := fetch.New(client, fetch.NewConfig(), testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	topic := testcluster.Name(t, "")
	testcluster.MustCreateTopic(t, c, topic, 1, 1)
	p, err := f.Add(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := make(chan struct{}, 100)
	p.Notify(func() { calls <- struct{}{} })
	testcluster.MustProduce(t, c, topic, 1, 0, 3)
	var got int
	for got < 3 {
		select {
		case <-calls:
		case <-time.After(30 * time.Second):
			t.Fatalf("no notification with %d of 3 records taken", got)
		}
		for {
			r, err := p.Poll()
			if err != nil {
				t.Fatal(err)
			}
			if r == nil {
				break
			}
			got += r.Len()
		}
	}
	p.Close()
	select {
	case <-calls:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification at Close")
	}
	p2, err := f.Add(topic, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	p2.Notify(func() { calls <- struct{}{} })
	p2.Notify(nil)
	for len(calls) > 0 {
		<-calls
	}
	p2.Close()
	if n := len(calls); n != 0 {
		t.Errorf("%d notifications after Notify(nil)", n)
	}
}

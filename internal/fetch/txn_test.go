package fetch_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestReadCommitted writes, with sarama's transactional producer, to two
// partitions: a committed transaction (c1), an aborted one (a), a
// committed one (c2), then leaves one open (o). read_uncommitted reads
// every data record (c1, a, c2, o: 35, control records skipped);
// read_committed reads c1 and c2 only, stops at the last stable offset
// (the open transaction's first offset), and reads o once it commits; the
// position then moves past o's commit marker, the last offset of the log.
func TestReadCommitted(t *testing.T) {
	c, client := sharedClient(t)
	topic := testcluster.Name(t, "")
	const P = 2
	testcluster.MustCreateTopic(t, c, topic, P, 1)
	cfg := testcluster.SaramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = topic
	cfg.Net.MaxOpenRequests = 1
	prod, err := sarama.NewSyncProducer(c.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	send := func(tag string, n int) {
		t.Helper()
		for i := range n {
			for part := int32(0); part < P; part++ {
				if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: part,
					Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", tag, i))}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	txn := func(tag string, n int, commit bool) {
		t.Helper()
		if err := prod.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		send(tag, n)
		if commit {
			err = prod.CommitTxn()
		} else {
			err = prod.AbortTxn()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	txn("c1", 10, true)
	txn("a", 10, false)
	txn("c2", 10, true)
	if err := prod.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	send("o", 5)

	values := func(r *reader) string {
		var vs []string
		for _, g := range r.recs {
			vs = append(vs, g.value)
		}
		return strings.Join(vs, ",")
	}
	want := func(tags ...string) string {
		var vs []string
		for _, tag := range tags {
			n := 10
			if tag == "o" {
				n = 5
			}
			for i := range n {
				vs = append(vs, fmt.Sprintf("%s-%d", tag, i))
			}
		}
		return strings.Join(vs, ",")
	}

	uncfg := fetch.NewConfig()
	un := newFetcher(t, client, uncfg)
	comcfg := fetch.NewConfig()
	comcfg.Isolation = sarama.ReadCommitted
	com := newFetcher(t, client, comcfg)
	var committed []*reader
	for part := int32(0); part < P; part++ {
		pu, err := un.Add(topic, part, 0)
		if err != nil {
			t.Fatal(err)
		}
		ru := &reader{t: t, p: pu}
		ru.readN(35, 30*time.Second)
		if got, w := values(ru), want("c1", "a", "c2", "o"); got != w {
			t.Fatalf("read_uncommitted, partition %d:\n got %s\nwant %s", part, got, w)
		}
		pc, err := com.Add(topic, part, 0)
		if err != nil {
			t.Fatal(err)
		}
		rc := &reader{t: t, p: pc}
		rc.readN(20, 30*time.Second)
		if got, w := values(rc), want("c1", "c2"); got != w {
			t.Fatalf("read_committed, partition %d:\n got %s\nwant %s", part, got, w)
		}
		// c1 0-9, marker 10, a 11-20, marker 21, c2 22-31, marker 32, o 33-37
		if lso, hwm := rc.last.LastStableOffset, rc.last.HighWaterMark; lso != 33 || hwm != 38 {
			t.Fatalf("read_committed, partition %d: last stable offset %d, high watermark %d; want 33, 38", part, lso, hwm)
		}
		if n := rc.last.NextOffset; n != 33 {
			t.Fatalf("read_committed, partition %d: NextOffset %d, want 33 (after c2's marker)", part, n)
		}
		committed = append(committed, rc)
	}
	if err := prod.CommitTxn(); err != nil {
		t.Fatal(err)
	}
	for part, rc := range committed {
		rc.readN(25, 30*time.Second)
		if got, w := values(rc), want("c1", "c2", "o"); got != w {
			t.Fatalf("read_committed after the commit, partition %d:\n got %s\nwant %s", part, got, w)
		}
		// o's commit marker (38) ends the log: the position moves past
		// it, with or without the records, so a consumer can commit 39.
		rc.awaitNext(39, 30*time.Second)
	}
}

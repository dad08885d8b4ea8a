package manager_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestIsolationLevels: sarama's transactional producer writes to two
// partitions a committed transaction (c1), an aborted one (a) and a
// committed one (c2). A member with Sarama.Consumer.IsolationLevel
// ReadCommitted reads c1 and c2 only; one with the default
// (ReadUncommitted) reads all three; neither sees a control record. Both
// commit the high water mark on Close, past the last commit marker, so
// the group shows no lag.
func TestIsolationLevels(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, n = 2, 10
	topic, _, sub := newTopic(t, c, parts)
	pcfg := testcluster.SaramaConfig()
	pcfg.Producer.Idempotent = true
	pcfg.Producer.RequiredAcks = sarama.WaitForAll
	pcfg.Producer.Transaction.ID = topic
	pcfg.Net.MaxOpenRequests = 1
	prod, err := sarama.NewSyncProducer(c.Addrs(), pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for _, txn := range []struct {
		tag    string
		commit bool
	}{{"c1", true}, {"a", false}, {"c2", true}} {
		if err := prod.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			for p := int32(0); p < parts; p++ {
				if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: p,
					Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", txn.tag, i))}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if txn.commit {
			err = prod.CommitTxn()
		} else {
			err = prod.AbortTxn()
		}
		if err != nil {
			t.Fatalf("ending transaction %s: %v", txn.tag, err)
		}
	}
	// Each partition ends with 3n records and 3 control markers, which
	// the coordinator writes after CommitTxn or AbortTxn returned.
	var hwm map[int32]int64
	await(t, 30*time.Second, "every transaction marker written", func() bool {
		var err error
		hwm, err = c.HighWaterMarks(topic)
		if err != nil {
			return false
		}
		for p := int32(0); p < parts; p++ {
			if hwm[p] != 3*n+3 {
				return false
			}
		}
		return true
	})
	for _, level := range []struct {
		name  string
		level sarama.IsolationLevel
		tags  []string
	}{
		{"read_committed", sarama.ReadCommitted, []string{"c1", "c2"}},
		{"read_uncommitted", sarama.ReadUncommitted, []string{"c1", "a", "c2"}},
	} {
		t.Run(level.name, func(t *testing.T) {
			group := testcluster.Name(t, "g")
			cfg := apiConfig(t)
			cfg.Sarama = testcluster.SaramaConfig()
			cfg.Sarama.Consumer.IsolationLevel = level.level
			cons := mustJoin(t, c, group, sub, cfg)
			defer cons.Close()
			got := map[int32][]string{}
			for range parts * n * len(level.tags) {
				m := mustNext(t, cons.Each, 30*time.Second)
				got[m.Partition] = append(got[m.Partition], string(m.Value))
				cons.Ack(m)
			}
			var want []string
			for _, tag := range level.tags {
				for i := range n {
					want = append(want, fmt.Sprintf("%s-%d", tag, i))
				}
			}
			for p := int32(0); p < parts; p++ {
				if strings.Join(got[p], ",") != strings.Join(want, ",") {
					t.Errorf("partition %d read %v; want %v", p, got[p], want)
				}
			}
			if m, err := next(cons.Each, time.Second); err == nil {
				t.Errorf("a message past the last transaction: %d@%d %q", m.Partition, m.Offset, m.Value)
			}
			if err := cons.Close(); err != nil {
				t.Fatal(err)
			}
			// The high water mark is past the commit marker.
			checkCommitted(t, c, group, topic, parts, hwm)
		})
	}
}

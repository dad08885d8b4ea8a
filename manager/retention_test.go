package manager_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// TestRetentionDeletesCommittedOffset: records are deleted below the log
// start the way retention deletes them (DeleteRecords moves the log start
// offset as a deleted segment does).
//   - The group's committed offset was deleted while no member ran: the
//     next member starts from the new log start under the reset policy
//     (oldest), reports ErrReset and counts it in Stats.
//   - The member's fetch position is deleted while it runs (the partition
//     paused, records produced and deleted past its position): on Resume it
//     continues from the new log start, reports and counts a second reset,
//     and commits from there.
func TestRetentionDeletesCommittedOffset(t *testing.T) {
	c := testcluster.Shared(t)
	topic, group, sub := newTopic(t, c, 1)
	tp := manager.TopicPartition{Topic: topic, Partition: 0}
	testcluster.MustProduce(t, c, topic, 1, 0, 100)
	admin, err := sarama.NewClusterAdmin(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// consume reads offsets from to end-1 in order, and acks them.
	consume := func(cons *manager.Consumer, what string, from, end int64) {
		t.Helper()
		for want := from; want < end; want++ {
			m := mustNext(t, cons.Each, 30*time.Second)
			if m.Offset != want || string(m.Value) != testcluster.Value(topic, int(want)) {
				t.Fatalf("%s: offset %d (%q); want %d", what, m.Offset, m.Value, want)
			}
			cons.Ack(m)
		}
	}
	closeCommitted := func(cons *manager.Consumer, what string, want int64) {
		t.Helper()
		if err := cons.Close(); err != nil {
			t.Fatal(err)
		}
		if got, err := c.CommittedOffsets(t.Context(), group, topic, 1); err != nil || got[0] != want {
			t.Fatalf("committed %s: %v, %v; want %d", what, got, err, want)
		}
	}

	// A first member commits 50.
	cons := mustJoin(t, c, group, sub, apiConfig(t))
	consume(cons, "first member", 0, 50)
	closeCommitted(cons, "after the first member", 50)
	if err := admin.DeleteRecords(topic, map[int32]int64{0: 80}); err != nil {
		t.Fatal(err)
	}

	cons = mustJoin(t, c, group, sub, apiConfig(t))
	defer cons.Close()
	resets := 0
	drainErrors := func() {
		for {
			select {
			case err := <-cons.Errors():
				if errors.Is(err, manager.ErrReset) {
					resets++
				}
			default:
				return
			}
		}
	}
	checkResets := func(want int) {
		t.Helper()
		await(t, 10*time.Second, fmt.Sprintf("reset %d reported", want), func() bool { drainErrors(); return resets >= want })
		if s := cons.Stats(); len(s.Partitions) != 1 || s.Partitions[0].Resets != uint64(want) {
			t.Fatalf("stats %+v: want %d resets", s.Partitions, want)
		}
	}
	consume(cons, "after the committed offset was deleted (the new log start on)", 80, 100)
	checkResets(1)

	// The fetch position deleted while the member runs.
	if err := cons.Pause(t.Context(), tp); err != nil {
		t.Fatal(err)
	}
	testcluster.MustProduce(t, c, topic, 1, 100, 100)
	if err := admin.DeleteRecords(topic, map[int32]int64{0: 150}); err != nil {
		t.Fatal(err)
	}
	if err := cons.Resume(tp); err != nil {
		t.Fatal(err)
	}
	consume(cons, "after the fetch position was deleted", 150, 200)
	checkResets(2)
	closeCommitted(cons, "after Close", 200)
}

package manager_test

import (
	"errors"
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

	// A first member commits 50.
	cons := mustJoin(t, c, group, sub, apiConfig(t))
	for want := int64(0); want < 50; want++ {
		m := mustNext(t, cons.Each, 30*time.Second)
		if m.Offset != want {
			t.Fatalf("first member: offset %d; want %d", m.Offset, want)
		}
		cons.Ack(m)
	}
	if err := cons.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.CommittedOffsets(t.Context(), group, topic, 1); err != nil || got[0] != 50 {
		t.Fatalf("committed after the first member: %v, %v; want 50", got, err)
	}
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
	for want := int64(80); want < 100; want++ {
		m := mustNext(t, cons.Each, 30*time.Second)
		if m.Offset != want || string(m.Value) != testcluster.Value(topic, int(want)) {
			t.Fatalf("after the committed offset was deleted: offset %d (%q); want %d, the new log start on", m.Offset, m.Value, want)
		}
		cons.Ack(m)
	}
	await(t, 10*time.Second, "the first reset reported", func() bool { drainErrors(); return resets >= 1 })
	if s := cons.Stats(); len(s.Partitions) != 1 || s.Partitions[0].Resets != 1 {
		t.Fatalf("stats %+v: want one reset", s.Partitions)
	}

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
	for want := int64(150); want < 200; want++ {
		m := mustNext(t, cons.Each, 30*time.Second)
		if m.Offset != want || string(m.Value) != testcluster.Value(topic, int(want)) {
			t.Fatalf("after the fetch position was deleted: offset %d (%q); want %d", m.Offset, m.Value, want)
		}
		cons.Ack(m)
	}
	await(t, 10*time.Second, "the second reset reported", func() bool { drainErrors(); return resets >= 2 })
	if s := cons.Stats(); s.Partitions[0].Resets != 2 {
		t.Fatalf("stats %+v: want two resets", s.Partitions)
	}
	if err := cons.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.CommittedOffsets(t.Context(), group, topic, 1); err != nil || got[0] != 200 {
		t.Fatalf("committed after Close: %v, %v; want 200", got, err)
	}
}

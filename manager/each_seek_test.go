package manager_test

import (
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// TestEachAfterSeekAndPause: after Seek the next message an Each loop
// yields is the one at the new offset, whether the loop kept the rest of a
// batch (left early) or is running; after Pause a loop yields at most the
// rest of the batch it holds, nothing more until Resume, and then goes on
// without a gap.
func TestEachAfterSeekAndPause(t *testing.T) {
	c, topic, _, _, s := oneStream(t)
	ctx := t.Context()
	// A loop left early, then Seek.
	for range 5 {
		m := mustNext(t, s.Each, 30*time.Second)
		t.Logf("offset %d", m.Offset)
	}
	if err := s.Seek(ctx, 50); err != nil {
		t.Fatal(err)
	}
	if m := mustNext(t, s.Each, 30*time.Second); m.Offset != 50 {
		t.Errorf("left early, Seek(50): next offset %d; want 50", m.Offset)
	}
	// A running loop that seeks.
	sought := false
	for m := range s.Each(ctx) {
		if !sought {
			if err := s.Seek(ctx, 20); err != nil {
				t.Fatal(err)
			}
			sought = true
			continue
		}
		if m.Offset != 20 {
			t.Errorf("running loop, Seek(20): next offset %d; want 20", m.Offset)
		}
		break
	}
	// Pause: at most the rest of the batch held, then nothing until Resume.
	if err := s.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	last := int64(20)
	for {
		m, err := next(s.Each, 2*time.Second)
		if err != nil {
			break
		}
		if m.Offset != last+1 {
			t.Fatalf("while paused: offset %d after %d", m.Offset, last)
		}
		last = m.Offset
	}
	if last-20 > 256 {
		t.Errorf("%d messages yielded after Pause: more than the batch held", last-20)
	}
	if m, err := next(s.Each, 2*time.Second); err == nil { // observation window
		t.Errorf("Pause: offset %d yielded while paused, after the batch held", m.Offset)
	}
	if _, err := c.Produce(topic, 1, 100, 100); err != nil { // in case the held batch reached the end
		t.Fatal(err)
	}
	s.Resume()
	if m := mustNext(t, s.Each, 30*time.Second); m.Offset != last+1 {
		t.Errorf("after Resume: offset %d, want %d (no gap)", m.Offset, last+1)
	}
}

// oneStream joins a ModePartitions consumer (closed at the test's end) to
// a new one-partition topic holding offsets 0-99 and returns the cluster,
// the topic, the group, the consumer and the partition's stream.
func oneStream(t *testing.T) (*testcluster.Cluster, string, string, *manager.Consumer, *manager.PartitionStream) {
	t.Helper()
	c := testcluster.Shared(t)
	topic, group, sub := newTopic(t, c, 1)
	testcluster.MustProduce(t, c, topic, 1, 0, 100)
	cfg := apiConfig(t)
	cfg.Mode = manager.ModePartitions
	cons := mustJoin(t, c, group, sub, cfg)
	t.Cleanup(func() { _ = cons.Close() })
	for ps, err := range cons.EachPartition(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		return c, topic, group, cons, ps
	}
	t.Fatal("EachPartition ended without a stream")
	return nil, "", "", nil, nil
}

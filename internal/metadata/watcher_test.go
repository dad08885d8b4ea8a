package metadata_test

import (
	"errors"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

func TestInitialSnapshot(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "t")
	testcluster.MustCreateTopic(t, c, topic, 4, 3)
	w := open(t, c, only(topic))
	s := w.Snapshot()
	if s.Version != 1 {
		t.Errorf("Version = %d, want 1", s.Version)
	}
	ps := s.Topics[topic]
	if len(ps) != 4 {
		t.Fatalf("%s has %d partitions, want 4: %v", topic, len(ps), s.Topics)
	}
	for i, p := range ps {
		if p.Topic != topic || p.ID != int32(i) || len(p.Replicas) != 3 || p.Leader != p.Replicas[0] {
			t.Errorf("partition %d = %+v, want 3 replicas led by the first", i, p)
		}
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
}

func TestTopicCreatedAfterOpen(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "t")
	w := open(t, c, only(topic))
	if _, ok := w.Snapshot().Topics[topic]; ok {
		t.Fatal("topic listed before it exists")
	}
	testcluster.MustCreateTopic(t, c, topic, 3, 2)
	select {
	case <-w.Changes():
	case <-ctxT(t).Done():
		t.Fatal("Changes never fired")
	}
	s := await(t, w, "the new topic with leaders", led(topic, 3))
	if s.Version < 2 {
		t.Errorf("Version = %d after a change, want > 1", s.Version)
	}
}

func TestAddPartitionsSeen(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "t")
	testcluster.MustCreateTopic(t, c, topic, 2, 2)
	w := open(t, c, only(topic))
	await(t, w, "2 partitions", led(topic, 2))
	if err := c.AddPartitions(ctxT(t), topic, 5); err != nil {
		t.Fatal(err)
	}
	s := await(t, w, "5 partitions", led(topic, 5))
	for i, p := range s.Topics[topic] {
		if p.ID != int32(i) {
			t.Fatalf("partitions not sorted by ID: %v", s.Topics[topic])
		}
	}
}

func TestDeleteTopicSeen(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "t")
	other := testcluster.Name(t, "other")
	for _, n := range []string{topic, other} {
		testcluster.MustCreateTopic(t, c, n, 2, 2)
	}
	w := open(t, c, only(topic, other))
	await(t, w, "the topic", led(topic, 2))
	if err := c.DeleteTopic(topic); err != nil {
		t.Fatal(err)
	}
	await(t, w, "the topic gone", func(s metadata.Snapshot) bool { _, ok := s.Topics[topic]; return !ok })
	if !led(other, 2)(w.Snapshot()) {
		t.Errorf("the other topic suffered: %v", w.Snapshot().Topics[other])
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err() = %v after a deletion", err)
	}
}

func TestFilterExcludes(t *testing.T) {
	c := testcluster.Shared(t)
	in, out := testcluster.Name(t, "in"), testcluster.Name(t, "out")
	for _, n := range []string{in, out} {
		testcluster.MustCreateTopic(t, c, n, 2, 1)
	}
	w := open(t, c, only(in))
	s := w.Snapshot()
	if !led(in, 2)(s) {
		t.Fatalf("selected topic: %v", s.Topics[in])
	}
	if ps, ok := s.Topics[out]; !ok || ps != nil {
		t.Fatalf("excluded topic = %v (listed %v), want listed without partitions", ps, ok)
	}
	if slices.Contains(s.Selected(), out) {
		t.Fatal("Selected() contains the excluded topic")
	}
	w.SetFilter(only(out))
	s = await(t, w, "the filter switched", func(s metadata.Snapshot) bool { return led(out, 2)(s) && s.Topics[in] == nil })
	if _, ok := s.Topics[in]; !ok {
		t.Error("the deselected topic is no longer listed")
	}
}

func TestOpenFails(t *testing.T) {
	c := testcluster.Shared(t)
	zs := dial(t, c.ZooKeeperAddr()+"/no-such-chroot")
	defer zs.Close()
	_, err := metadata.OpenSession(zs, nil, testConfig(), testLogger(t))
	if !errors.Is(err, metadata.ErrNoCluster) {
		t.Errorf("wrong chroot: err = %v, want ErrNoCluster", err)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "t")
	testcluster.MustCreateTopic(t, c, topic, 3, 3)
	zs := dial(t, c.ZooKeeperConnect())
	defer zs.Close()
	before := goleak.IgnoreCurrent()
	w, err := metadata.OpenSession(zs, nil, testConfig(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	await(t, w, "the topic", led(topic, 3))
	w.SetFilter(only(topic))
	await(t, w, "others deselected", func(s metadata.Snapshot) bool { return slices.Equal(s.Selected(), []string{topic}) })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if !errors.Is(w.Err(), metadata.ErrClosed) {
		t.Errorf("Err() after Close = %v", w.Err())
	}
	goleak.VerifyNone(t, before)
}

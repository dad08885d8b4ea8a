package manager_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// TestConsumeOffsetsMatchKafkaTool consumes a topic to its end with two
// instances and closes them, then compares the committed offsets with
// what others see.
//
// kafka: Kafka's own `kafka-consumer-groups --describe` lists every
// partition with CURRENT-OFFSET equal to the offset read through the admin
// API and to the log-end offset, LOG-END-OFFSET equal to the log-end
// offset, LAG 0, and no active member (zkgroup is not a Kafka group member).
//
// zookeeper: with OffsetStorage = StorageZooKeeper, each partition's
// offset is the plain decimal log-end offset at
// /consumers/<group>/offsets/<topic>/<partition> (the old consumer's
// layout, under the cluster's chroot), and nothing was committed to Kafka.
func TestConsumeOffsetsMatchKafkaTool(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, n = 6, 3000
	consume := func(t *testing.T, storage manager.Storage) (topic, group string, hwm map[int32]int64) {
		topic, group, sub := newTopic(t, c, parts)
		testcluster.MustProduce(t, c, topic, parts, 0, n)
		rec := newRecorder(t)
		led := rec.Ledger
		o := poolOpts{workers: 3, maxDelay: 200 * time.Microsecond, strict: true,
			configure: func(cfg *manager.Config) { cfg.OffsetStorage = storage }}
		a := joinPool(t, c, group, sub, "a", rec, o)
		b := joinPool(t, c, group, sub, "b", rec, o)
		await(t, 60*time.Second, "a, b balanced", func() bool { return poolBalanced(parts, a, b) })
		await(t, 2*time.Minute, "every message consumed", func() bool { return led.Count(topic, n) == n })
		a.close(t)
		b.close(t)
		led.CheckExactlyOnce(t, topic, n)
		rec.checkViolations(t)
		hwm, err := c.HighWaterMarks(topic)
		if err != nil {
			t.Fatal(err)
		}
		return topic, group, hwm
	}

	t.Run("kafka", func(t *testing.T) {
		topic, group, hwm := consume(t, manager.StorageKafka)
		viaAdmin := committed(t, c, group, topic, parts)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		rows, err := c.DescribeGroup(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int32]testcluster.GroupRow{}
		for _, r := range rows {
			if r.Topic != topic {
				t.Errorf("row of an unexpected topic: %+v", r)
				continue
			}
			if _, dup := got[r.Partition]; dup {
				t.Errorf("partition %d listed twice", r.Partition)
			}
			got[r.Partition] = r
		}
		if len(got) != parts {
			t.Errorf("kafka-consumer-groups lists %d partitions, want %d: %+v", len(got), parts, rows)
		}
		for p := int32(0); p < parts; p++ {
			r, ok := got[p]
			if !ok {
				continue
			}
			if r.CurrentOffset != viaAdmin[p] || r.CurrentOffset != hwm[p] {
				t.Errorf("partition %d: tool CURRENT-OFFSET %d, admin API %d, log-end %d", p, r.CurrentOffset, viaAdmin[p], hwm[p])
			}
			if r.LogEndOffset != hwm[p] {
				t.Errorf("partition %d: tool LOG-END-OFFSET %d, log-end %d", p, r.LogEndOffset, hwm[p])
			}
			if r.Lag != 0 {
				t.Errorf("partition %d: tool LAG %d, want 0", p, r.Lag)
			}
			if r.ConsumerID != "-" && r.ConsumerID != "" {
				t.Errorf("partition %d: tool CONSUMER-ID %q, want none", p, r.ConsumerID)
			}
		}
	})

	t.Run("zookeeper", func(t *testing.T) {
		topic, group, hwm := consume(t, manager.StorageZooKeeper)
		conn := testcluster.ZooKeeper(t, c)
		dir := c.Chroot() + "/consumers/" + group + "/offsets/" + topic
		children, _, err := conn.Children(dir)
		if err != nil {
			t.Fatalf("listing %s: %v", dir, err)
		}
		if len(children) != parts {
			t.Errorf("%s has children %v, want one per partition (%d)", dir, children, parts)
		}
		for p := int32(0); p < parts; p++ {
			path := dir + "/" + strconv.Itoa(int(p))
			data, _, err := conn.Get(path)
			if err != nil {
				t.Errorf("reading %s: %v", path, err)
				continue
			}
			v, err := strconv.ParseInt(string(data), 10, 64)
			if err != nil || strconv.FormatInt(v, 10) != string(data) {
				t.Errorf("%s holds %q, not a plain decimal", path, data)
				continue
			}
			if v != hwm[p] {
				t.Errorf("%s = %d, log-end %d", path, v, hwm[p])
			}
		}
		for p, off := range committed(t, c, group, topic, parts) {
			if off != -1 {
				t.Errorf("partition %d: %d committed to Kafka with ZooKeeper storage", p, off)
			}
		}
	})
}

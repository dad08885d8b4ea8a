package offsets

import (
	"context"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestMigrateCluster moves a group's offsets from ZooKeeper to Kafka and
// back on the real cluster, and checks Kafka's view with its own tool.
func TestMigrateCluster(t *testing.T) {
	c := testcluster.Shared(t)
	verifyNoLeaks(t)
	topic := clusterTopic(t, c, 3)
	group := testcluster.Name(t, "group")
	_, nodes := clusterZK(t, c)
	zs, err := NewZooKeeperStore(nodes, group, nil)
	if err != nil {
		t.Fatal(err)
	}
	ks := clusterKafkaStore(t, c, group)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	parts := []TopicPartition{{topic, 0}, {topic, 1}, {topic, 2}}

	// ZooKeeper: p0=5, p1=7, p2 none. Kafka: p1=9 already.
	if err := zs.Commit(ctx, topic, 0, 5); err != nil {
		t.Fatal(err)
	}
	if err := zs.Commit(ctx, topic, 1, 7); err != nil {
		t.Fatal(err)
	}
	if err := ks.Commit(ctx, topic, 1, 9); err != nil {
		t.Fatal(err)
	}

	report := func(from, to Store, opts MigrateOptions, want []Migration) {
		t.Helper()
		got, err := Migrate(ctx, from, to, parts, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("report %+v, want %+v", got, want)
		}
		for i := range want {
			want[i].TopicPartition = parts[i]
			if got[i] != want[i] {
				t.Fatalf("partition %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	}

	// A dry run writes nothing.
	report(zs, ks, MigrateOptions{DryRun: true}, []Migration{
		{From: 5, FromOK: true, Action: ActionDryRun},
		{From: 7, FromOK: true, To: 9, ToOK: true, Action: ActionSkipNotNewer},
		{Action: ActionSkipMissing},
	})
	wantOffset(t, ks, topic, 0, -1)

	// ZooKeeper -> Kafka.
	report(zs, ks, MigrateOptions{}, []Migration{
		{From: 5, FromOK: true, Action: ActionCopy},
		{From: 7, FromOK: true, To: 9, ToOK: true, Action: ActionSkipNotNewer},
		{Action: ActionSkipMissing},
	})
	wantOffset(t, ks, topic, 0, 5)
	wantOffset(t, ks, topic, 1, 9)
	wantOffset(t, ks, topic, 2, -1)
	rows := testcluster.MustDescribeTopic(ctx, t, c, group, topic)
	if len(rows) != 2 || rows[0].CurrentOffset != 5 || rows[1].CurrentOffset != 9 {
		t.Fatalf("kafka-consumer-groups sees %+v, want p0=5 p1=9", rows)
	}

	// Kafka -> ZooKeeper: p1 moves forward to 9, p0 is equal.
	report(ks, zs, MigrateOptions{}, []Migration{
		{From: 5, FromOK: true, To: 5, ToOK: true, Action: ActionSkipNotNewer},
		{From: 9, FromOK: true, To: 7, ToOK: true, Action: ActionCopy},
		{Action: ActionSkipMissing},
	})
	wantOffset(t, zs, topic, 1, 9)

	// An admin reset in Kafka goes back to ZooKeeper only with Overwrite.
	if err := ks.Reset(ctx, topic, 0, 2); err != nil {
		t.Fatal(err)
	}
	report(ks, zs, MigrateOptions{}, []Migration{
		{From: 2, FromOK: true, To: 5, ToOK: true, Action: ActionSkipNotNewer},
		{From: 9, FromOK: true, To: 9, ToOK: true, Action: ActionSkipNotNewer},
		{Action: ActionSkipMissing},
	})
	wantOffset(t, zs, topic, 0, 5)
	report(ks, zs, MigrateOptions{Overwrite: true}, []Migration{
		{From: 2, FromOK: true, To: 5, ToOK: true, Action: ActionCopy},
		{From: 9, FromOK: true, To: 9, ToOK: true, Action: ActionSkipNotNewer},
		{Action: ActionSkipMissing},
	})
	wantOffset(t, zs, topic, 0, 2)
}

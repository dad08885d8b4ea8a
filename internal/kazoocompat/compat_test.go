package kazoocompat

import (
	"encoding/json"
	"errors"
	"maps"
	"path"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wvanbergen/kazoo-go"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

const awaitFor = 90 * time.Second

// TestKazooCompat: kazoo-go, as the tools of zkgroup's users use it, and
// zkgroup read each other's groups in ZooKeeper, with each offset storage.
func TestKazooCompat(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Brokers(1))
	for _, storage := range []manager.Storage{manager.StorageKafka, manager.StorageZooKeeper} {
		t.Run("KazooReadsZkgroup/"+string(storage), func(t *testing.T) { kazooReadsZkgroup(t, cl, storage) })
		t.Run("ZkgroupReadsKazoo/"+string(storage), func(t *testing.T) { zkgroupReadsKazoo(t, cl, storage) })
	}
}

// kazooReadsZkgroup: three zkgroup members (two static, one whitelist)
// consume a 4-partition topic to its end; kazoo-go then finds the group,
// its instances, their subscriptions, each partition's owner and, with
// ZooKeeper offset storage, the committed offsets.
func kazooReadsZkgroup(t *testing.T, cl *testcluster.Cluster, storage manager.Storage) {
	const parts, n = 4, 200
	topic, group, static := newTopicGroup(t, cl, parts)
	white, err := subscription.Whitelist(topic)
	if err != nil {
		t.Fatal(err)
	}
	joined := time.Now()
	ms := []*member{join(t, cl, group, static, storage), join(t, cl, group, static, storage), join(t, cl, group, white, storage)}
	testcluster.MustProduce(t, cl, topic, parts, 0, n)
	hwm := testcluster.MustHighWaterMarks(t, cl, topic)
	took := testcluster.Await(t, awaitFor, 50*time.Millisecond, "every partition held once and committed at its end",
		func() bool { return settled(topic, hwm, ms...) })
	t.Logf("3 members consumed %d messages in %v", n, took)
	hold, _ := holdings(topic, ms...)
	byID := map[string]*member{}
	for _, m := range ms {
		byID[m.c.ID()] = m
	}

	k := newKazoo(t, cl)
	groups, err := k.Consumergroups()
	if err != nil {
		t.Fatalf("kazoo-go Consumergroups: %v", err)
	}
	if groups.Find(group) == nil {
		t.Errorf("kazoo-go Consumergroups does not list %q", group)
	}
	cg := k.Consumergroup(group)
	if ok, err := cg.Exists(); err != nil || !ok {
		t.Errorf("kazoo-go Exists: %v, %v; want true", ok, err)
	}

	// Instances: every member, and nothing else.
	insts, err := cg.Instances()
	if err != nil {
		t.Fatalf("kazoo-go Instances: %v", err)
	}
	var ids []string
	for _, in := range insts {
		ids = append(ids, in.ID)
	}
	if want := sorted(slices.Collect(maps.Keys(byID))); !slices.Equal(sorted(ids), want) {
		t.Errorf("kazoo-go Instances: %v; want the members %v", sorted(ids), want)
	}

	// Registrations. zkgroup writes the timestamp as the JVM consumer
	// does, a string of milliseconds (Kafka's layout; JVM tools reject a
	// number); kazoo-go's Registration type has an int64 there, so its
	// Registration() fails on zkgroup's registrations as on a JVM
	// consumer's. Every other field decodes into kazoo-go's type (the
	// JSON decoder goes on past the mismatch) and matches the member's
	// subscription.
	conn := testcluster.ZooKeeper(t, cl)
	for _, in := range insts {
		m := byID[in.ID]
		if m == nil {
			continue
		}
		_, err := in.Registration()
		if !timestampMismatch(err) {
			t.Errorf("kazoo-go Registration of %s: %v; want its json error on the string timestamp", in.ID, err)
		}
		raw, _, err := conn.Get(path.Join(cl.Chroot(), "consumers", group, "ids", in.ID))
		if err != nil {
			t.Fatal(err)
		}
		var reg kazoo.Registration
		if err := json.Unmarshal(raw, &reg); !timestampMismatch(err) {
			t.Errorf("%s: %s into kazoo.Registration: %v; want the error on the string timestamp alone", in.ID, raw, err)
		}
		if reg.Pattern != kazoo.RegPattern(m.sub.Pattern()) || reg.Version != kazoo.RegDefaultVersion ||
			!maps.Equal(reg.Subscription, m.sub.Registration()) {
			t.Errorf("%s: kazoo-go read pattern %q version %d subscription %v; want %q, %d, %v",
				in.ID, reg.Pattern, reg.Version, reg.Subscription, m.sub.Pattern(), kazoo.RegDefaultVersion, m.sub.Registration())
		}
		var jvm struct {
			Timestamp string `json:"timestamp"`
		}
		if err := json.Unmarshal(raw, &jvm); err != nil {
			t.Errorf("%s: %s: timestamp not a JSON string: %v", in.ID, raw, err)
		}
		millis, err := strconv.ParseInt(jvm.Timestamp, 10, 64)
		if at := time.UnixMilli(millis); err != nil || at.Before(joined.Truncate(time.Millisecond)) || at.After(time.Now()) {
			t.Errorf("%s: timestamp %q is not the milliseconds of its registration (joined %v)", in.ID, jvm.Timestamp, joined)
		}
	}

	// Owners: zkgroup writes the member's id into the owner node, the
	// form kazoo-go writes and reads (not the JVM's "<id>-<thread>"), so
	// kazoo-go's PartitionOwner is the instance that consumes the
	// partition.
	for p := int32(0); p < parts; p++ {
		owner, err := cg.PartitionOwner(topic, p)
		switch {
		case err != nil:
			t.Errorf("kazoo-go PartitionOwner(%d): %v", p, err)
		case owner == nil:
			t.Errorf("kazoo-go PartitionOwner(%d): none; %s consumes it", p, hold[p].owner)
		case owner.ID != hold[p].owner || insts.Find(owner.ID) == nil:
			t.Errorf("kazoo-go PartitionOwner(%d) = %q; want %q, the instance consuming it", p, owner.ID, hold[p].owner)
		}
	}
	topics, err := cg.Topics()
	if err != nil || len(topics) != 1 || topics[0].Name != topic {
		t.Errorf("kazoo-go Topics: %v, %v; want [%s]", topics, err, topic)
	}

	// Offsets.
	all, err := cg.FetchAllOffsets()
	if err != nil {
		t.Fatalf("kazoo-go FetchAllOffsets: %v", err)
	}
	kafka, err := cl.CommittedOffsets(t.Context(), group, topic, parts)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < parts; p++ {
		fetched, err := cg.FetchOffset(topic, p)
		if err != nil {
			t.Errorf("kazoo-go FetchOffset(%d): %v", p, err)
		}
		ours := hold[p].committed
		switch storage {
		case manager.StorageZooKeeper:
			// The same nodes, the same meaning: the next offset to consume.
			if fetched != ours || all[topic][p] != ours {
				t.Errorf("partition %d: kazoo-go FetchOffset %d, FetchAllOffsets %d; zkgroup committed %d",
					p, fetched, all[topic][p], ours)
			}
			if kafka[p] != -1 {
				t.Errorf("partition %d: committed %d to Kafka with ZooKeeper offset storage", p, kafka[p])
			}
		default:
			// In Kafka: kazoo-go reads ZooKeeper only and finds none.
			if fetched != -1 {
				t.Errorf("partition %d: kazoo-go FetchOffset %d with Kafka offset storage; want -1 (none in ZooKeeper)", p, fetched)
			}
			if kafka[p] != ours {
				t.Errorf("partition %d: Kafka has %d, zkgroup committed %d", p, kafka[p], ours)
			}
		}
	}
	if storage != manager.StorageZooKeeper && len(all) != 0 {
		t.Errorf("kazoo-go FetchAllOffsets = %v with Kafka offset storage; want none", all)
	}
}

// timestampMismatch reports whether err is encoding/json's error for a
// JSON string in kazoo-go's int64 timestamp.
func timestampMismatch(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te) && te.Field == "timestamp" && te.Value == "string"
}

// zkgroupReadsKazoo: an instance registered by kazoo-go's own
// ConsumergroupInstance.Register joins a group of one zkgroup member over
// 2 partitions. zkgroup counts it as a member (describe lists it, the
// member gives it a partition and leaves that partition to it), takes its
// claim and, with ZooKeeper offset storage, its committed offset; once it
// is gone the member takes every partition again.
func zkgroupReadsKazoo(t *testing.T, cl *testcluster.Cluster, storage manager.Storage) {
	const parts, n = 2, 20
	topic, group, static := newTopicGroup(t, cl, parts)
	testcluster.MustProduce(t, cl, topic, parts, 0, n)
	hwmA := testcluster.MustHighWaterMarks(t, cl, topic)
	m := join(t, cl, group, static, storage)
	testcluster.Await(t, awaitFor, 50*time.Millisecond, "the member alone holding both partitions, committed at their end",
		func() bool { return settled(topic, hwmA, m) })

	k := newKazoo(t, cl)
	cg := k.Consumergroup(group)
	in := cg.NewInstance()
	before := time.Now()
	if err := in.Register([]string{topic}); err != nil {
		t.Fatalf("kazoo-go Register: %v", err)
	}
	after := time.Now()
	t.Cleanup(func() { _ = in.Deregister() }) // when the test failed before it did

	// zkgroup counts the kazoo-go instance: the assignment gives it a
	// partition, which the member gives up and nobody claims.
	var st manager.Stats
	took := testcluster.Await(t, awaitFor, 50*time.Millisecond, "the member seeing the kazoo-go instance and keeping one partition",
		func() bool {
			st = m.c.Stats()
			return st.Ready && slices.Equal(sorted(st.Members), sorted([]string{m.c.ID(), in.ID})) &&
				len(st.Assigned) == 1 && len(st.Partitions) == 1
		})
	t.Logf("the member gave a partition up to the kazoo-go instance in %v", took)
	if st.BadRegistrations != 0 || len(st.StrategyMismatches) != 0 {
		t.Errorf("the member reads the kazoo-go registration as bad (%d) or as another strategy (%v)",
			st.BadRegistrations, st.StrategyMismatches)
	}
	kept := st.Partitions[0].Partition
	left := 1 - kept
	if owner, err := cg.PartitionOwner(topic, left); err != nil || owner != nil {
		t.Errorf("partition %d, left to the kazoo-go instance: owner %v, %v; want none", left, owner, err)
	}

	// describe lists the kazoo-go instance: its static subscription, and
	// its registration time, which kazoo-go writes as a JSON integer of
	// seconds.
	d := describe(t, cl, group, storage)
	dm := map[string]int{}
	for i, x := range d.Members {
		dm[x.ID] = i
	}
	if _, ok := dm[m.c.ID()]; !ok || len(d.Members) != 2 {
		t.Errorf("describe lists members %v; want %s and %s", d.Members, m.c.ID(), in.ID)
	}
	if i, ok := dm[in.ID]; !ok {
		t.Errorf("describe does not list the kazoo-go instance %s: %+v", in.ID, d.Members)
	} else {
		x := d.Members[i]
		if x.Error != "" || x.Pattern != "static" || !slices.Equal(x.Subscription, []string{topic}) || x.Strategy != "" {
			t.Errorf("describe: kazoo-go instance %+v; want pattern static, subscription [%s], no strategy, no error", x, topic)
		}
		if x.Registered.Before(before.Truncate(time.Second)) || x.Registered.After(after) {
			t.Errorf("describe: kazoo-go instance registered %v; it registered between %v and %v", x.Registered, before, after)
		}
	}
	checkOwners(t, d, topic, map[int32]string{kept: m.c.ID(), left: "-"})

	// The kazoo-go instance claims its partition (its owner node holds
	// its id) and, with ZooKeeper offset storage, commits there as a
	// kazoo-go consumer does.
	if err := in.ClaimPartition(topic, left); err != nil {
		t.Fatalf("kazoo-go ClaimPartition(%d): %v", left, err)
	}
	testcluster.MustProduce(t, cl, topic, parts, n, n)
	hwmB := testcluster.MustHighWaterMarks(t, cl, topic)
	kazooNext := hwmB[left] - 3
	if err := cg.CommitOffset(topic, left, kazooNext); err != nil {
		t.Fatalf("kazoo-go CommitOffset: %v", err)
	}
	testcluster.Await(t, awaitFor, 50*time.Millisecond, "the member committing its partition at its new end", func() bool {
		h, _ := holdings(topic, m)
		return len(h) == 1 && h[kept].committed == hwmB[kept]
	})
	d = describe(t, cl, group, storage)
	checkOwners(t, d, topic, map[int32]string{kept: m.c.ID(), left: in.ID})
	if st := m.c.Stats(); st.SquattedPartitions != 0 || len(st.Assigned) != 1 {
		t.Errorf("with the kazoo-go instance holding its partition: %d squatted, assigned %v; want 0 and [%d]",
			st.SquattedPartitions, st.Assigned, kept)
	}
	mark := len(m.handed(left))

	// The kazoo-go instance releases and leaves, as a kazoo-go consumer
	// does: the member takes its partition and every message left.
	if err := in.ReleasePartition(topic, left); err != nil {
		t.Fatalf("kazoo-go ReleasePartition: %v", err)
	}
	if err := in.Deregister(); err != nil {
		t.Fatalf("kazoo-go Deregister: %v", err)
	}
	testcluster.Await(t, awaitFor, 50*time.Millisecond, "the member alone holding both partitions again, committed at their end",
		func() bool { return settled(topic, hwmB, m) })
	got := m.handed(left)[mark:]
	if len(got) == 0 {
		t.Fatalf("partition %d: nothing handed out after the takeover", left)
	}
	// With ZooKeeper offset storage the member starts where kazoo-go
	// committed; with Kafka offset storage kazoo-go's ZooKeeper offset is
	// not read: the member starts at its own commit in Kafka.
	want := hwmA[left]
	if storage == manager.StorageZooKeeper {
		want = kazooNext
	}
	if got[0] != want {
		t.Errorf("partition %d: the member started at %d after the takeover; want %d (kazoo-go committed %d, the member %d)",
			left, got[0], want, kazooNext, hwmA[left])
	}
	fetched, err := cg.FetchOffset(topic, left)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[manager.Storage]int64{manager.StorageZooKeeper: hwmB[left], manager.StorageKafka: kazooNext}[storage]; fetched != want {
		t.Errorf("partition %d: kazoo-go FetchOffset %d at the end; want %d", left, fetched, want)
	}
}

// checkOwners fails t unless describe shows each partition of topic in
// want with its consumer id ("-": none).
func checkOwners(t *testing.T, d description, topic string, want map[int32]string) {
	t.Helper()
	got := map[int32]string{}
	for _, r := range d.Partitions {
		if r.Topic == topic {
			got[r.Partition] = r.ConsumerID
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("describe: owners %v; want %v", got, want)
	}
}

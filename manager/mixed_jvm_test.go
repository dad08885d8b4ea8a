package manager_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/manager/assign"
)

// TestMixedGroupJVM moves a group member by member between Kafka 0.11's
// own high-level consumer (kafka.tools.ConsoleConsumer, a JVM of its own)
// and zkgroup, under load: a JVM member alone; a zkgroup member joins, a
// second JVM member, a second zkgroup member; the JVM members leave one by
// one (SIGTERM: the shutdown hook commits) until only zkgroup remains; a
// JVM member joins again and the zkgroup members leave. At each step the
// owner nodes must split the partitions as Kafka's old assignor computes
// them over the JVM's thread ids (<consumerId>-0); in the end no message
// is missing, none a zkgroup member had is delivered again (the old
// consumer may redeliver one message per rebalance of its own: see
// testcluster.OldConsumer.Rebalances), and the committed offsets are at
// the log end. With range and ZooKeeper offsets, and with roundrobin and Kafka
// offsets (the JVM with offsets.storage=kafka and dual.commit.enabled).
func TestMixedGroupJVM(t *testing.T) {
	c := testcluster.Shared(t)
	for _, tc := range []struct {
		name     string
		strategy assign.Strategy
		storage  manager.Storage
	}{
		{"range-zookeeper", assign.Range(), manager.StorageZooKeeper},
		{"roundrobin-kafka", assign.RoundRobin(), manager.StorageKafka},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runMixedGroup(t, c, tc.strategy, tc.storage)
		})
	}
}

// mixedGroup is one group of JVM and zkgroup members over one topic.
type mixedGroup struct {
	t        *testing.T
	c        *testcluster.Cluster
	conn     *zk.Conn
	topic    string
	group    string
	parts    int32
	strategy assign.Strategy
	storage  manager.Storage
	led      *recorder

	mu  sync.Mutex
	jvm map[string]*jvmMember // by name
	// ranJVM: every JVM member started, for its rebalance count.
	ranJVM []*jvmMember
	zkg    map[string]*poolInstance
	ids    map[string]string // member id -> name, for every member ever started
}

type jvmMember struct {
	id string
	o  *testcluster.OldConsumer
}

const mixedPartitions = 4

func runMixedGroup(t *testing.T, c *testcluster.Cluster, strategy assign.Strategy, storage manager.Storage) {
	start := time.Now()
	topic, group, _ := newTopic(t, c, mixedPartitions)
	g := &mixedGroup{t: t, c: c, conn: testcluster.ZooKeeper(t, c), topic: topic, group: group,
		parts: mixedPartitions, strategy: strategy, storage: storage, led: newRecorder(t),
		jvm: map[string]*jvmMember{}, zkg: map[string]*poolInstance{}, ids: map[string]string{}}
	if got := javaOrder(topic, mixedPartitions); strategy.Name() == assign.NameRoundRobin && !slices.IsSorted(got) {
		// The old roundrobin deals partitions in the order of the Java
		// hash codes of "[topic,p]"; zkgroup in partition order.
		t.Fatalf("topic %q: the JVM's roundrobin order %v differs from zkgroup's (see the README)", topic, got)
	}
	prod := testcluster.StartProducer(t, c, topic, mixedPartitions, 0, 20, 50*time.Millisecond)
	stopped := false
	defer func() {
		if !stopped {
			prod.Halt(t)
		}
	}()

	g.step("J1 alone", func() { g.startJVM("J1", true) })
	g.step("Z1 joins", func() { g.startZK("Z1") })
	g.step("J2 joins", func() { g.startJVM("J2", false) })
	g.step("Z2 joins", func() { g.startZK("Z2") })
	g.step("J1 leaves", func() { g.stopJVM("J1") })
	g.step("J2 leaves", func() { g.stopJVM("J2") })
	g.step("J3 joins", func() { g.startJVM("J3", false) })
	g.step("Z1 leaves", func() { g.stopZK("Z1") })
	g.step("Z2 leaves", func() { g.stopZK("Z2") })

	n := prod.Halt(t)
	stopped = true
	testcluster.Await(t, 90*time.Second, 200*time.Millisecond, fmt.Sprintf("all %d messages consumed", n), func() bool {
		return g.led.Count(topic, n) == n || g.jvmFailed() != nil
	})
	if err := g.jvmFailed(); err != nil {
		t.Fatal(err)
	}
	hwm, err := c.HighWaterMarks(topic)
	if err != nil {
		t.Fatal(err)
	}
	g.stopJVM("J3")
	missing, dups := g.led.MissingAndDups(topic, n)
	// A zkgroup member delivering a message again means a handover that
	// was not exact. The old consumer redelivers on its own at times:
	// after a JVM member had a message (see OldConsumer.Rebalances), at
	// most one per rebalance or shutdown of each JVM member; and when a
	// JVM member takes a partition over, since it reads the committed
	// offsets before it claims (ZookeeperConsumerConnector's rebalance):
	// a final commit that lands between its read and its claim is not
	// seen, and it reads again the tail its predecessor delivered. Those
	// come as one run of consecutive offsets per partition taken over.
	zkFirst, jvmFirst, allowed := 0, 0, 0
	var tails []testcluster.Delivery // first deliveries by zkgroup, redelivered by a JVM member
	for _, ds := range dups {
		again := slices.IndexFunc(ds[1:], func(d testcluster.Delivery) bool { return !strings.HasPrefix(d.Who, "J") }) >= 0
		switch {
		case strings.HasPrefix(ds[0].Who, "J"):
			jvmFirst += len(ds) - 1
		case again || len(ds) > 2:
			zkFirst += len(ds) - 1
		default:
			tails = append(tails, ds[0])
		}
	}
	takeovers := runs(tails)
	for _, m := range g.ranJVM {
		allowed += m.o.Rebalances() + 1
	}
	t.Logf("%s: %d messages produced over 4 partitions, %d deliveries: %d missing, %d redelivered after a zkgroup member had them, "+
		"%d after a JVM member had them (the old consumer's own at-least-once, at most %d here), %d read again by a JVM member taking over from a zkgroup member in %d runs (at most %d); %v in all",
		strategy.Name()+"/"+string(storage), n, g.led.Total(), len(missing), zkFirst, jvmFirst, allowed, len(tails), takeovers, allowed,
		time.Since(start).Round(time.Second))
	if len(missing) > 0 || zkFirst > 0 || jvmFirst > allowed || takeovers > allowed {
		var d []string
		for v, ds := range dups {
			d = append(d, fmt.Sprintf("%s %v", v, ds))
		}
		t.Errorf("of %d messages: %d missing (%s), duplicates: %s", n, len(missing), testcluster.Head(missing, 5), testcluster.Head(d, 5))
	}
	if got := g.committed(); !equalOffsets(got, hwm) {
		t.Errorf("committed offsets (%s) %v, want the log end %v", storage, got, hwm)
	}
}

// step runs change, then waits until the group's owner nodes split the
// partitions as the old consumer's assignor computes for the members now
// running, and until every partition delivered something since; it logs
// the split and how long it took.
func (g *mixedGroup) step(what string, change func()) {
	t := g.t
	t.Helper()
	began := time.Now()
	change()
	before := g.led.Total()
	members := g.memberIDs()
	want := oldAssignment(g.strategy.Name(), members, g.topic, g.parts)
	var got map[int32]string
	testcluster.Await(t, 90*time.Second, 100*time.Millisecond, what+": owners as the old assignor computes", func() bool {
		if g.jvmFailed() != nil {
			return true
		}
		got = g.owners()
		return maps32Equal(got, want) && g.zkgroupFetching(want)
	})
	if err := g.jvmFailed(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	settled := time.Since(began)
	testcluster.Await(t, 60*time.Second, 100*time.Millisecond, what+": consumption continues", func() bool {
		return g.led.Total() >= before+100
	})
	g.mu.Lock()
	for name, in := range g.zkg {
		if es := in.c.Stats().IncompatibleMembers; len(es) > 0 {
			t.Errorf("%s: %s reports incompatible members: %v", what, name, es)
		}
	}
	g.mu.Unlock()
	t.Logf("step %-10s members %-12s owners %s (settled in %v)", what, g.names(members), g.split(got),
		settled.Round(10*time.Millisecond))
}

func (g *mixedGroup) startJVM(name string, fromBeginning bool) {
	t := g.t
	t.Helper()
	known := g.registered()
	cfg := testcluster.OldConsumerConfig{Group: g.group, Topic: g.topic, Strategy: g.strategy.Name(),
		OffsetStorage: string(g.storage), DualCommit: g.storage == manager.StorageKafka, FromBeginning: fromBeginning}
	o := g.c.OldConsumer(t, cfg, func(v string) { g.led.Add(name, -1, -1, v) })
	var id string
	testcluster.Await(t, 60*time.Second, 100*time.Millisecond, name+"'s registration", func() bool {
		for _, x := range g.registered() {
			if !slices.Contains(known, x) {
				id = x
				return true
			}
		}
		return o.Err() != nil
	})
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	g.jvm[name] = &jvmMember{id: id, o: o}
	g.ranJVM = append(g.ranJVM, g.jvm[name])
	g.ids[id] = name
	g.mu.Unlock()
}

func (g *mixedGroup) stopJVM(name string) {
	g.t.Helper()
	g.mu.Lock()
	m := g.jvm[name]
	delete(g.jvm, name)
	g.mu.Unlock()
	if err := m.o.Stop(30 * time.Second); err != nil {
		g.t.Fatal(err)
	}
}

func (g *mixedGroup) startZK(name string) {
	in := joinPool(g.t, g.c, g.group, mustStatic(g.t, g.topic), name, g.led, poolOpts{noHooks: true,
		configure: func(cfg *manager.Config) {
			cfg.InstanceID = "" // an id in the JVM's shape, ordered by start time like the JVM's
			cfg.Strategy = g.strategy
			cfg.OffsetStorage = g.storage
		}})
	g.mu.Lock()
	g.zkg[name] = in
	g.ids[in.c.ID()] = name
	g.mu.Unlock()
}

func (g *mixedGroup) stopZK(name string) {
	g.mu.Lock()
	in := g.zkg[name]
	delete(g.zkg, name)
	g.mu.Unlock()
	in.close(g.t)
}

// memberIDs returns the ids of the members running, sorted.
func (g *mixedGroup) memberIDs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, m := range g.jvm {
		out = append(out, m.id)
	}
	for _, in := range g.zkg {
		out = append(out, in.c.ID())
	}
	sort.Strings(out)
	return out
}

func (g *mixedGroup) names(ids []string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = g.ids[id]
	}
	return strings.Join(out, ",")
}

// split renders owners as "J1:0,1 Z1:2,3" in partition order.
func (g *mixedGroup) split(owners map[int32]string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var order []string
	by := map[string][]string{}
	for p := int32(0); p < g.parts; p++ {
		n := g.ids[owners[p]]
		if by[n] == nil {
			order = append(order, n)
		}
		by[n] = append(by[n], strconv.Itoa(int(p)))
	}
	out := make([]string, len(order))
	for i, n := range order {
		out[i] = n + ":" + strings.Join(by[n], ",")
	}
	return strings.Join(out, " ")
}

// jvmFailed returns why a JVM member exited unasked, if one did.
func (g *mixedGroup) jvmFailed() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range g.jvm {
		if err := m.o.Err(); err != nil {
			return err
		}
	}
	return nil
}

// registered lists the group's registrations.
func (g *mixedGroup) registered() []string {
	ids, _, err := g.conn.Children(g.c.Chroot() + zkdata.IDsPath(g.group))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		g.t.Fatal(err)
	}
	return ids
}

// owners reads the owner nodes and maps each to its member's id: the JVM
// writes its thread id, <consumerId>-0; zkgroup its member id.
func (g *mixedGroup) owners() map[int32]string {
	out := map[int32]string{}
	for p := int32(0); p < g.parts; p++ {
		data, _, err := g.conn.Get(g.c.Chroot() + zkdata.OwnerPath(g.group, g.topic, p))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			g.t.Fatal(err)
		}
		owner := zkdata.ParseOwner(data)
		g.mu.Lock()
		if _, ok := g.ids[owner]; !ok {
			owner = strings.TrimSuffix(owner, "-0")
		}
		g.mu.Unlock()
		out[p] = owner
	}
	return out
}

// zkgroupFetching: every zkgroup member fetches exactly what want gives it.
func (g *mixedGroup) zkgroupFetching(want map[int32]string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, in := range g.zkg {
		var got, exp []int32
		for _, p := range in.c.Stats().Partitions {
			got = append(got, p.Partition)
		}
		for p, id := range want {
			if id == in.c.ID() {
				exp = append(exp, p)
			}
		}
		slices.Sort(got)
		slices.Sort(exp)
		if !slices.Equal(got, exp) {
			return false
		}
	}
	return true
}

// committed reads the group's committed offsets from the store the
// zkgroup members use.
func (g *mixedGroup) committed() map[int32]int64 {
	if g.storage == manager.StorageKafka {
		return committed(g.t, g.c, g.group, g.topic, g.parts)
	}
	out := map[int32]int64{}
	for p := int32(0); p < g.parts; p++ {
		data, _, err := g.conn.Get(g.c.Chroot() + zkdata.OffsetPath(g.group, g.topic, p))
		if err != nil {
			g.t.Fatalf("offset of partition %d: %v", p, err)
		}
		off, err := zkdata.ParseOffset(g.topic, p, data)
		if err != nil {
			g.t.Fatal(err)
		}
		out[p] = off
	}
	return out
}

func maps32Equal[V comparable](a, b map[int32]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func equalOffsets(a, b map[int32]int64) bool { return maps32Equal(a, b) }

// oldAssignment is what Kafka 0.11's old consumer computes for one topic
// of parts partitions subscribed by members with one stream each, as the
// owner of each partition: over the thread ids <member>-0 sorted as
// strings, range cuts the partitions into contiguous runs (the first
// parts mod n threads get one more); roundrobin deals the partitions in
// the order of the Java hash codes of "[topic,p]" to the threads in turn.
func oldAssignment(strategy string, members []string, topic string, parts int32) map[int32]string {
	threads := make([]string, len(members))
	for i, m := range members {
		threads[i] = m + "-0"
	}
	sort.Strings(threads)
	owner := func(thread string) string { return strings.TrimSuffix(thread, "-0") }
	out := map[int32]string{}
	if len(threads) == 0 {
		return out
	}
	switch strategy {
	case assign.NameRange:
		n := int32(len(threads))
		per, extra := parts/n, parts%n
		for i := int32(0); i < n; i++ {
			from := per*i + min(i, extra)
			k := per
			if i < extra {
				k++
			}
			for p := from; p < from+k; p++ {
				out[p] = owner(threads[i])
			}
		}
	case assign.NameRoundRobin:
		for i, p := range javaOrder(topic, parts) {
			out[p] = owner(threads[i%len(threads)])
		}
	}
	return out
}

// javaOrder returns the partitions of topic sorted as the old roundrobin
// assignor sorts them: by the Java String.hashCode of "[topic,p]" (a
// signed 32-bit value), stably.
func javaOrder(topic string, parts int32) []int32 {
	ps := make([]int32, parts)
	for i := range ps {
		ps[i] = int32(i)
	}
	hash := func(p int32) int32 {
		var h int32
		for _, u := range utf16Units(fmt.Sprintf("[%s,%d]", topic, p)) {
			h = 31*h + int32(u)
		}
		return h
	}
	sort.SliceStable(ps, func(i, j int) bool { return hash(ps[i]) < hash(ps[j]) })
	return ps
}

func utf16Units(s string) []uint16 {
	var out []uint16
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xD800+(r>>10)), uint16(0xDC00+(r&0x3FF)))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}

// TestOldConsumerStreamsReported: a member registered as the old consumer
// with two streams (threads) for the topic, which zkgroup cannot agree
// with, is reported on Errors() and in Stats while it lasts.
func TestOldConsumerStreamsReported(t *testing.T) {
	c := testcluster.Shared(t)
	topic, group, sub := newTopic(t, c, mixedPartitions)
	conn := testcluster.ZooKeeper(t, c)
	cfg := baseConfig(t, "")
	cfg.InstanceID = ""
	cfg.Strategy = assign.Range()
	cfg.OffsetStorage = manager.StorageZooKeeper
	cons := mustJoin(t, c, group, sub, cfg)
	reported := make(chan *manager.IncompatibleMemberError, 16)
	var wg sync.WaitGroup
	wg.Go(func() {
		for err := range cons.Errors() {
			var e *manager.IncompatibleMemberError
			if errors.As(err, &e) {
				reported <- e
			} else {
				t.Logf("error: %v", err)
			}
		}
	})
	defer wg.Wait()
	defer cons.Close()
	testcluster.Await(t, 30*time.Second, 50*time.Millisecond, "the member's partitions", func() bool {
		return len(cons.Stats().Partitions) == mixedPartitions
	})
	// An id older than the member's (it sorts first): threads
	// <jvm>-0 <jvm>-1 <member>-0 take 0,1 / 2 / 3 where zkgroup computes
	// 0,1 / 2,3.
	jvm := group + "_host-1000000000000-aaaaaaaa"
	reg := fmt.Sprintf(`{"version":1,"subscription":{%q:2},"pattern":"static","timestamp":"1000000000000"}`, topic)
	path := c.Chroot() + zkdata.IDPath(group, jvm)
	if _, err := conn.Create(path, []byte(reg), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var e *manager.IncompatibleMemberError
	select {
	case e = <-reported:
	case <-time.After(30 * time.Second):
		t.Fatal("no IncompatibleMemberError reported within 30s")
	}
	t.Logf("reported: %v", e)
	want := []manager.TopicPartition{{Topic: topic, Partition: 2}}
	if e.Peer != jvm || e.Strategy != assign.NameRange || e.Differ != 1 || !slices.Equal(e.Partitions, want) ||
		!strings.Contains(e.Reason, "2 streams") {
		t.Errorf("got %+v, want peer %s, strategy range, partition %v, a reason naming the 2 streams", e, jvm, want)
	}
	if got := cons.Stats().IncompatibleMembers; len(got) != 1 || got[0].Peer != jvm {
		t.Errorf("Stats().IncompatibleMembers = %v, want the one peer", got)
	}
	if err := conn.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	testcluster.Await(t, 30*time.Second, 50*time.Millisecond, "the report to clear", func() bool {
		return len(cons.Stats().IncompatibleMembers) == 0
	})
}

// runs counts the runs of consecutive offsets of one partition in ds.
func runs(ds []testcluster.Delivery) int {
	slices.SortFunc(ds, func(a, b testcluster.Delivery) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	n := 0
	for i, d := range ds {
		if i == 0 || d.Partition != ds[i-1].Partition || d.Offset != ds[i-1].Offset+1 {
			n++
		}
	}
	return n
}

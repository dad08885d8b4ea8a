package offsets

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// clusterClient returns a sarama client for the shared cluster with
// auto-commit off, closed when the test ends.
func clusterClient(t *testing.T, c *testcluster.Cluster) sarama.Client {
	t.Helper()
	cfg := testcluster.SaramaConfig()
	cfg.ClientID = "zkgroup-offsets-test"
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	client, err := sarama.NewClient(c.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// clusterKafkaStore returns a KafkaStore on its own client, closed (store,
// then client) when the test ends.
func clusterKafkaStore(t *testing.T, c *testcluster.Cluster, group string) *KafkaStore {
	t.Helper()
	client := clusterClient(t, c)
	s, err := NewKafkaStore(client, group, NewKafkaConfig(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// clusterTopic creates a topic with replication factor 3 on the shared
// cluster.
func clusterTopic(t *testing.T, c *testcluster.Cluster, partitions int32) string {
	t.Helper()
	topic := testcluster.Name(t, "topic")
	testcluster.MustCreateTopic(t, c, topic, partitions, 3)
	return topic
}

func wantOffset(t *testing.T, s Store, topic string, p int32, want int64) {
	t.Helper()
	got, ok, err := s.Fetch(context.Background(), topic, p)
	if err != nil {
		t.Fatalf("fetch %s/%d: %v", topic, p, err)
	}
	if want < 0 {
		if ok {
			t.Fatalf("fetch %s/%d = %d, want nothing committed", topic, p, got)
		}
		return
	}
	if !ok || got != want {
		t.Fatalf("fetch %s/%d = %d (ok %v), want %d", topic, p, got, ok, want)
	}
}

// TestKafkaStoreCluster commits, fetches and resets on real partitions, as
// a simple group (generation -1, no member id), and checks with a second
// store instance that the offsets are in Kafka.
func TestKafkaStoreCluster(t *testing.T) {
	c := testcluster.Shared(t)
	verifyNoLeaks(t)
	topic := clusterTopic(t, c, 4)
	group := testcluster.Name(t, "group")
	s := clusterKafkaStore(t, c, group)
	ctx := context.Background()

	for p := int32(0); p < 4; p++ {
		wantOffset(t, s, topic, p, -1)
	}
	for p, v := range map[int32]int64{0: 3, 1: 10, 2: 0} {
		if err := s.Commit(ctx, topic, p, v); err != nil {
			t.Fatal(err)
		}
		wantOffset(t, s, topic, p, v)
	}
	wantOffset(t, s, topic, 3, -1)

	steps := []struct {
		op         string
		next, want int64
	}{
		{"commit", 2, 3}, // backwards: skipped
		{"commit", 3, 3}, // equal
		{"commit", 7, 7},
		{"reset", 1, 1},  // backwards on purpose
		{"commit", 0, 1}, // below the reset: skipped
		{"commit", 4, 4},
	}
	for _, st := range steps {
		var err error
		if st.op == "commit" {
			err = s.Commit(ctx, topic, 0, st.next)
		} else {
			err = s.Reset(ctx, topic, 0, st.next)
		}
		if err != nil {
			t.Fatalf("%s %d: %v", st.op, st.next, err)
		}
		wantOffset(t, s, topic, 0, st.want)
	}

	// Another instance on another client reads the same offsets.
	other := clusterKafkaStore(t, c, group)
	for p, v := range map[int32]int64{0: 4, 1: 10, 2: 0, 3: -1} {
		wantOffset(t, other, topic, p, v)
	}
	// ... and a different group sees none of them.
	stranger := clusterKafkaStore(t, c, testcluster.Name(t, "other-group"))
	wantOffset(t, stranger, topic, 1, -1)
}

// TestKafkaStoreReleaseRemanage releases a partition and manages it again,
// several times: sarama must not still consider it managed.
func TestKafkaStoreReleaseRemanage(t *testing.T) {
	c := testcluster.Shared(t)
	verifyNoLeaks(t)
	topic := clusterTopic(t, c, 2)
	s := clusterKafkaStore(t, c, testcluster.Name(t, "group"))
	ctx := context.Background()
	for round := int64(1); round <= 3; round++ {
		if err := s.Commit(ctx, topic, 0, round*10); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := s.Commit(ctx, topic, 1, round); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.Release(rctx, topic, 0)
		cancel()
		if err != nil {
			t.Fatalf("round %d: release: %v", round, err)
		}
		if err := s.Release(ctx, topic, 0); err != nil {
			t.Fatalf("round %d: second release: %v", round, err)
		}
		s.mu.Lock()
		_, managed := s.parts[TopicPartition{topic, 0}]
		s.mu.Unlock()
		if managed {
			t.Fatalf("round %d: partition 0 still managed after release", round)
		}
		// Fetch does not need the partition managed.
		wantOffset(t, s, topic, 0, round*10)
	}
	// After a release the floor is gone: the next owner may commit below.
	if err := s.Commit(ctx, topic, 0, 25); err != nil {
		t.Fatal(err)
	}
	wantOffset(t, s, topic, 0, 25)
	wantOffset(t, s, topic, 1, 3)
}

// TestKafkaStoreConcurrentCommits commits interleaved values from several
// goroutines per partition; each partition must end at its maximum.
func TestKafkaStoreConcurrentCommits(t *testing.T) {
	c := testcluster.Shared(t)
	verifyNoLeaks(t)
	const partitions, workers, per = 3, 4, 15
	topic := clusterTopic(t, c, partitions)
	s := clusterKafkaStore(t, c, testcluster.Name(t, "group"))
	var wg sync.WaitGroup
	for p := int32(0); p < partitions; p++ {
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					if err := s.Commit(context.Background(), topic, p, int64(i*workers+w)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	for p := int32(0); p < partitions; p++ {
		wantOffset(t, s, topic, p, per*workers-1)
	}
}

// TestKafkaStoreCloseAfterCommits closes a store that manages several
// partitions: Close returns quickly and completely, and is idempotent.
func TestKafkaStoreCloseAfterCommits(t *testing.T) {
	c := testcluster.Shared(t)
	verifyNoLeaks(t)
	topic := clusterTopic(t, c, 4)
	client := clusterClient(t, c)
	cfg := NewKafkaConfig()
	s, err := NewKafkaStore(client, testcluster.Name(t, "group"), cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 4; p++ {
		if err := s.Commit(context.Background(), topic, p, int64(p)+1); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > cfg.CloseTimeout {
		t.Fatalf("close took %v", d)
	}
	if !isDone(s.t.Dead()) {
		t.Fatal("the batcher still runs after close")
	}
	s.mu.Lock()
	n := len(s.parts)
	s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d partitions still managed after close", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(context.Background(), topic, 0, 9); !errors.Is(err, ErrClosed) {
		t.Fatalf("commit after close: %v", err)
	}
}

// TestKafkaStoreClusterBatch: the commits of many partitions in one batch
// are one OffsetCommit request and nothing is read back; a batch with one
// partition the broker refuses (it does not exist) fails that partition
// only; and many partitions' final commits at once (Commit, verified)
// share their requests.
func TestKafkaStoreClusterBatch(t *testing.T) {
	c := testcluster.Shared(t)
	verifyNoLeaks(t)
	const n = 40
	topic := clusterTopic(t, c, n)
	group := testcluster.Name(t, "group")
	s := clusterKafkaStore(t, c, group)
	ctx := context.Background()
	if _, _, err := s.Fetch(ctx, topic, 0); err != nil { // finds the coordinator
		t.Fatal(err)
	}
	before := s.Stats()
	batch := make([]Offset, n)
	for p := range int32(n) {
		batch[p] = Offset{TopicPartition: TopicPartition{topic, p}, Next: 10 + int64(p)}
	}
	for i, err := range s.CommitBatch(ctx, batch) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	st := s.Stats()
	if st.CommitRequests-before.CommitRequests != 1 || st.FetchRequests != before.FetchRequests || st.Committed-before.Committed != n {
		t.Fatalf("a batch of %d: %d commit requests, %d fetches, %d committed; want 1, 0, %d",
			n, st.CommitRequests-before.CommitRequests, st.FetchRequests-before.FetchRequests, st.Committed-before.Committed, n)
	}
	if before.Coordinator != "" {
		t.Fatalf("Stats().Coordinator %q before the first commit", before.Coordinator)
	}
	if coord, err := clusterClient(t, c).Coordinator(group); err != nil || st.Coordinator != coord.Addr() {
		t.Fatalf("Stats().Coordinator %q after a commit; the coordinator is %v (%v)", st.Coordinator, coord, err)
	}
	other := clusterKafkaStore(t, c, group)
	for p := range int32(n) {
		wantOffset(t, other, topic, p, 10+int64(p))
	}

	// Partition n does not exist: the broker refuses it, the others pass.
	before = s.Stats()
	for p := range batch {
		batch[p].Next += 100
	}
	batch = append(batch, Offset{TopicPartition: TopicPartition{topic, n}, Next: 5})
	errs := s.CommitBatch(ctx, batch)
	for i, err := range errs {
		if i == n {
			var pe *PartitionError
			if !errors.Is(err, ErrCommit) || !errors.Is(err, sarama.ErrUnknownTopicOrPartition) || !errors.As(err, &pe) || pe.Partition != n {
				t.Fatalf("the missing partition: %v, want ErrCommit wrapping UnknownTopicOrPartition for partition %d", err, n)
			}
			continue
		}
		if err != nil {
			t.Fatalf("entry %d failed with the missing partition: %v", i, err)
		}
	}
	st = s.Stats()
	retries := int64(clusterClient(t, c).Config().Consumer.Offsets.Retry.Max)
	if got := int64(st.CommitRequests - before.CommitRequests); got != 1+retries || st.Committed-before.Committed != n {
		t.Fatalf("%d commit requests and %d committed, want 1 (all) + %d retries of the missing one, %d committed",
			got, st.Committed-before.Committed, retries, n)
	}
	for p := range int32(n) {
		wantOffset(t, other, topic, p, 110+int64(p))
	}

	// Final commits of every partition at once: verified, in a few rounds.
	before = s.Stats()
	var wg sync.WaitGroup
	for p := range int32(n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Commit(ctx, topic, p, 200+int64(p)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	st = s.Stats()
	rounds := st.Rounds - before.Rounds
	t.Logf("%d verified commits: %d rounds, %d commit requests, %d fetches", n, rounds, st.CommitRequests-before.CommitRequests, st.FetchRequests-before.FetchRequests)
	if st.Verified-before.Verified != n || st.CommitRequests-before.CommitRequests != rounds || st.FetchRequests-before.FetchRequests != rounds || rounds >= n/2 {
		t.Fatalf("stats before %+v after %+v: want %d verified, one commit and one fetch per round, far fewer rounds than commits", before, st, n)
	}
	for p := range int32(n) {
		wantOffset(t, other, topic, p, 200+int64(p))
	}
}

// TestKafkaStoreLargeBatch: a batch whose offset records exceed what Kafka
// appends at once (1 MiB; here 64 partitions of a group whose name, which
// each record's key holds, has 30,000 characters: a string field holds at
// most 32,767) is sent in several requests, and every offset lands. In one
// request Kafka refuses the whole batch (OFFSET_METADATA_TOO_LARGE for
// every partition), as it did for a member committing 10,000 partitions of
// 40-character topics.
func TestKafkaStoreLargeBatch(t *testing.T) {
	c := testcluster.Shared(t)
	verifyNoLeaks(t)
	const n = 64
	topic := clusterTopic(t, c, n)
	group := testcluster.Name(t, "group") + "-" + strings.Repeat("g", 30000)
	s := clusterKafkaStore(t, c, group)
	ctx := context.Background()
	batch := make([]Offset, n)
	for p := range int32(n) {
		batch[p] = Offset{TopicPartition: TopicPartition{topic, p}, Next: 7 + int64(p), Token: 1_000_000 + int64(p)}
	}
	before := s.Stats()
	for i, err := range s.CommitBatch(ctx, batch) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	perRequest := maxCommitBytes / commitRecordBytes(group, topic)
	want := uint64((n + perRequest - 1) / perRequest)
	if got := s.Stats().CommitRequests - before.CommitRequests; got != want || want < 2 {
		t.Errorf("%d commit requests, want %d (%d partitions of about %d bytes each)", got, want, n, commitRecordBytes(group, topic))
	}
	used := 0
	for _, l := range s.links {
		if l.coordinator() != "" {
			used++
		}
	}
	if want := min(commitLinks, int(want)); used != want {
		t.Errorf("the requests went out on %d connections; want %d", used, want)
	}
	other := clusterKafkaStore(t, c, group)
	for p := range int32(n) {
		wantOffset(t, other, topic, p, 7+int64(p))
	}
}

// TestKafkaStoreUnknownTopic: the broker refuses commits for a topic that
// does not exist, and Commit says so within CommitTimeout.
func TestKafkaStoreUnknownTopic(t *testing.T) {
	c := testcluster.Shared(t)
	verifyNoLeaks(t)
	client := clusterClient(t, c)
	cfg := NewKafkaConfig()
	cfg.CommitTimeout = 20 * time.Second
	s, err := NewKafkaStore(client, testcluster.Name(t, "group"), cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	missing := testcluster.Name(t, "missing")
	start := time.Now()
	err = s.Commit(context.Background(), missing, 0, 5)
	if !errors.Is(err, ErrCommit) {
		t.Fatalf("commit to a missing topic: %v", err)
	}
	t.Logf("commit to a missing topic failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	wantOffset(t, s, missing, 0, -1)
}

// TestDescribeGroupSeesKafkaStore checks KafkaStore's commits with Kafka's
// own kafka-consumer-groups tool.
func TestDescribeGroupSeesKafkaStore(t *testing.T) {
	c := testcluster.Shared(t)
	topic := clusterTopic(t, c, 3)
	group := testcluster.Name(t, "group")
	produced, err := c.Produce(topic, 3, 0, 31) // 11, 10, 10 messages
	if err != nil {
		t.Fatal(err)
	}
	s := clusterKafkaStore(t, c, group)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.Commit(ctx, topic, 0, 4); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, topic, 1, 10); err != nil {
		t.Fatal(err)
	}
	check := func(want map[int32]int64) {
		t.Helper()
		got := testcluster.MustDescribeTopic(ctx, t, c, group, topic)
		if len(got) != len(want) {
			t.Fatalf("describe rows %+v, want partitions %v", got, want)
		}
		for p, cur := range want {
			r := got[p]
			leo := produced.PerPartition[p]
			if r.CurrentOffset != cur || r.LogEndOffset != leo || r.Lag != leo-cur {
				t.Fatalf("partition %d: %+v, want current %d, log end %d, lag %d", p, r, cur, leo, leo-cur)
			}
			if r.ConsumerID != "-" || r.Host != "-" || r.ClientID != "-" {
				t.Fatalf("partition %d: a member owns it: %+v", p, r)
			}
		}
	}
	check(map[int32]int64{0: 4, 1: 10})
	if err := s.Reset(ctx, topic, 1, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, topic, 2, 1); err != nil {
		t.Fatal(err)
	}
	check(map[int32]int64{0: 4, 1: 2, 2: 1})
}

// TestKafkaStoreTokens: commits carry the writer's fencing token as their
// metadata (a member reading the group with sarama sees it), and a store
// that reads a commit whose token is older than one it wrote or read
// before counts and logs a regression; newer tokens are no regression.
func TestKafkaStoreTokens(t *testing.T) {
	c := testcluster.Shared(t)
	topic := clusterTopic(t, c, 2)
	group := testcluster.Name(t, "group")
	member := clusterKafkaStore(t, c, group)
	stale := clusterKafkaStore(t, c, group) // an old owner whose commit lands late
	ctx := context.Background()

	// p0: newer claims follow older ones: no regression.
	if err := member.Commit(WithToken(ctx, 5), topic, 0, 10); err != nil {
		t.Fatal(err)
	}
	if errs := stale.CommitBatch(ctx, []Offset{{TopicPartition: TopicPartition{topic, 0}, Next: 20, Token: 9}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if next, _, err := member.Fetch(ctx, topic, 0); err != nil || next != 20 {
		t.Fatalf("fetch p0: %d, %v", next, err)
	}
	// p1: the member commits under claim 7, then a commit of claim 3
	// lands: the member's next read finds it.
	if err := member.Commit(WithToken(ctx, 7), topic, 1, 100); err != nil {
		t.Fatal(err)
	}
	if err := stale.Commit(WithToken(ctx, 3), topic, 1, 50); err != nil {
		t.Fatal(err)
	}
	if st := member.Stats(); st.Regressions != 0 {
		t.Fatalf("regressions %d before any read", st.Regressions)
	}
	if next, _, err := member.Fetch(ctx, topic, 1); err != nil || next != 50 {
		t.Fatalf("fetch p1: %d, %v", next, err)
	}
	if st := member.Stats(); st.Regressions != 1 {
		t.Fatalf("regressions %d, want 1 (p1 went from claim 7 to claim 3)", st.Regressions)
	}
	// The token is Kafka's commit metadata: any client sees it.
	admin, err := sarama.NewClusterAdminFromClient(clusterClient(t, c))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]int64{0: 9, 1: 3} {
		b := resp.GetBlock(topic, p)
		if b == nil {
			t.Fatalf("p%d: no block", p)
		}
		if tok, ok := ParseToken(b.Metadata); !ok || tok != want {
			t.Errorf("p%d: metadata %q, want token %d", p, b.Metadata, want)
		}
	}
}

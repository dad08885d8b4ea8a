package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/offsets"
	"go.uber.org/goleak"
)

// group is n managers of partitions 0..n-1 (committed offset 0, per
// messages each, a fence each) sharing a store, a committer that never
// ticks by itself (the test calls commit) and one Out channel.
type group struct {
	ms       []*Manager
	fences   []*testFence
	store    *memStore
	feeds    *fakeFetcher
	c        *Committer
	out      chan *Message
	reported chan error
	r        round
}

func newGroup(t *testing.T, n, per int) *group {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the other cleanups
	g := &group{store: &memStore{committed: map[int32]int64{}, logging: true}, out: make(chan *Message, n*per+1),
		reported: make(chan error, 100)}
	for p := range int32(n) {
		g.store.committed[p] = 0
	}
	cfg := NewConfig()
	cfg.CommitInterval = time.Hour
	cfg.DrainTimeout = 0
	g.c = committerFor(t, g.store, cfg)
	feeds := feedsOf(n, per)
	g.feeds = feeds
	for p := range int32(n) {
		f := newFence()
		m, err := start(handOffTo(t, g.out, Params{Topic: "t", Partition: p, Client: noResolver{}, Fetcher: feeds,
			Store: g.store, Committer: g.c, Fence: f, Config: cfg,
			Report: func(err error) { g.reported <- err }}))
		if err != nil {
			t.Fatal(err)
		}
		g.ms, g.fences = append(g.ms, m), append(g.fences, f)
		t.Cleanup(func() { _ = m.Stop(false) })
	}
	return g
}

// receive takes every message of the group and acks those ack allows.
func (g *group) receive(t *testing.T, total int, ack func(*Message) bool) {
	t.Helper()
	for range total {
		m := recv(t, g.out)
		if ack(m) {
			if r := m.Ack(); r != AckOK {
				t.Fatalf("ack %d/%d: %v", m.Partition, m.Offset, r)
			}
		}
	}
	for _, m := range g.ms {
		awaitDelivered(m, uint64(total/len(g.ms)))
	}
}

// commit runs one interval of the committer and returns the batch the
// store got, if any.
func (g *group) commit(t *testing.T) []offsets.Offset {
	t.Helper()
	before := len(g.store.batchLog())
	g.c.commit(&g.r, nil)
	log := g.store.batchLog()
	switch len(log) - before {
	case 0:
		return nil
	case 1:
		return log[before]
	}
	t.Fatalf("%d batches in one interval", len(log)-before)
	return nil
}

// asMap returns a batch as partition -> offset, failing on a repeated
// partition.
func asMap(t *testing.T, b []offsets.Offset) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for _, o := range b {
		if _, dup := out[o.Partition]; dup || o.Topic != "t" {
			t.Fatalf("batch %v: %s twice, or another topic", b, o.TopicPartition)
		}
		out[o.Partition] = o.Next
	}
	return out
}

// TestCommitterOneBatchForAll: one interval commits every partition whose
// watermark moved, in one CommitBatch call, at the acked watermark (never
// past an unacked message); an interval where nothing moved commits
// nothing; the routine commits do not use Commit.
func TestCommitterOneBatchForAll(t *testing.T) {
	const n, per = 12, 5
	g := newGroup(t, n, per)
	g.receive(t, n*per, func(m *Message) bool { return !(m.Partition%3 == 0 && m.Offset == 2) })
	got := asMap(t, g.commit(t))
	if len(got) != n {
		t.Fatalf("batch of %d partitions %v, want all %d", len(got), got, n)
	}
	for p, next := range got {
		want := int64(per)
		if p%3 == 0 {
			want = 2 // the unacked message
		}
		if next != want {
			t.Errorf("partition %d committed at %d, want %d", p, next, want)
		}
	}
	if b := g.commit(t); b != nil {
		t.Fatalf("a second interval with nothing new committed %v", b)
	}
	for _, m := range g.ms {
		if s := m.Stats(); s.Committed != got[m.Partition()] || s.CommitErrors != 0 {
			t.Errorf("partition %d: stats committed %d, errors %d", m.Partition(), s.Committed, s.CommitErrors)
		}
	}
	g.store.mu.Lock()
	commits := len(g.store.commits)
	g.store.mu.Unlock()
	if commits != 0 {
		t.Fatalf("%d single commits for routine commits", commits)
	}
	if st := g.c.Stats(); st.Batches != 1 || st.Committed != n || st.Failed != 0 || st.Managers != n {
		t.Fatalf("committer stats %+v", st)
	}
}

// TestCommitterPartitionError: an entry that fails is counted and reported
// by its own manager only, and retried in the next interval.
func TestCommitterPartitionError(t *testing.T) {
	const n, per = 4, 3
	g := newGroup(t, n, per)
	g.receive(t, n*per, func(*Message) bool { return true })
	boom := errors.New("boom")
	g.store.mu.Lock()
	g.store.fail = map[int32]error{2: boom}
	g.store.mu.Unlock()
	if b := g.commit(t); len(b) != n {
		t.Fatalf("batch %v, want all %d partitions", b, n)
	}
	select {
	case err := <-g.reported:
		var pe *Error
		if !errors.As(err, &pe) || pe.Op != "commit" || pe.Partition != 2 || !errors.Is(err, ErrCommit) || !errors.Is(err, boom) {
			t.Fatalf("reported %v, want a commit *Error of partition 2 wrapping ErrCommit and the store's error", err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("offset %d", per)) {
			t.Errorf("reported %q without the offset", err)
		}
	default:
		t.Fatal("nothing reported")
	}
	select {
	case err := <-g.reported:
		t.Fatalf("a second report: %v", err)
	default:
	}
	for _, m := range g.ms {
		s := m.Stats()
		wantErrs, wantCommitted := uint64(0), int64(per)
		if m.Partition() == 2 {
			wantErrs, wantCommitted = 1, 0
		}
		if s.CommitErrors != wantErrs || s.Committed != wantCommitted {
			t.Errorf("partition %d: %d commit errors, committed %d; want %d, %d", m.Partition(), s.CommitErrors, s.Committed, wantErrs, wantCommitted)
		}
	}
	g.store.mu.Lock()
	g.store.fail = nil
	g.store.mu.Unlock()
	if b := asMap(t, g.commit(t)); len(b) != 1 || b[2] != per {
		t.Fatalf("next interval committed %v, want only partition 2 at %d", b, per)
	}
	if st := g.c.Stats(); st.Batches != 2 || st.Committed != n || st.Failed != 1 {
		t.Fatalf("committer stats %+v", st)
	}
}

// TestCommitterFence: a suspended partition is left out until it is
// healthy again; a lost one commits nothing, here or at Stop.
func TestCommitterFence(t *testing.T) {
	const n, per = 3, 2
	g := newGroup(t, n, per)
	g.receive(t, n*per, func(*Message) bool { return true })
	g.fences[0].suspend()
	g.fences[1].lose()
	if b := asMap(t, g.commit(t)); len(b) != 1 || b[2] != per {
		t.Fatalf("committed %v, want only partition 2", b)
	}
	g.fences[0].resume()
	if b := asMap(t, g.commit(t)); len(b) != 1 || b[0] != per {
		t.Fatalf("committed %v, want partition 0 once healthy", b)
	}
	if err := g.ms[1].Stop(false); err != nil {
		t.Fatal(err)
	}
	if got := g.store.get(1); got != 0 {
		t.Fatalf("the lost partition holds %d, want the initial 0", got)
	}
	if st := g.c.Stats(); st.Managers != n-1 {
		t.Fatalf("%d managers registered after a Stop, want %d", st.Managers, n-1)
	}
}

// gateStore holds CommitBatch until released, and logs the order of
// writes.
type gateStore struct {
	*memStore
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	order   []string
}

func (s *gateStore) CommitBatch(ctx context.Context, b []offsets.Offset) []error {
	s.entered <- struct{}{}
	<-s.release
	s.mu.Lock()
	s.order = append(s.order, fmt.Sprintf("batch %v", asOffsets(b)))
	s.mu.Unlock()
	return s.memStore.CommitBatch(ctx, b)
}

func (s *gateStore) Commit(ctx context.Context, topic string, p int32, next int64) error {
	s.mu.Lock()
	s.order = append(s.order, fmt.Sprintf("commit %d", next))
	s.mu.Unlock()
	return s.memStore.Commit(ctx, topic, p, next)
}

func asOffsets(b []offsets.Offset) []int64 {
	out := make([]int64, len(b))
	for i, o := range b {
		out[i] = o.Next
	}
	return out
}

// TestCommitterFinalCommitWaits: a Stop whose final commit would race a
// batch under way waits for it, so the partition's commits happen one
// after the other, in order.
func TestCommitterFinalCommitWaits(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	store := &gateStore{memStore: &memStore{committed: map[int32]int64{0: 0}, logging: true},
		entered: make(chan struct{}), release: make(chan struct{})}
	cfg := NewConfig()
	cfg.CommitInterval = time.Hour
	c := committerFor(t, store, cfg)
	out := make(chan *Message, 10)
	feeds := feedsOf(1, 3)
	m, err := start(handOffTo(t, out, Params{Topic: "t", Partition: 0, Client: noResolver{}, Fetcher: feeds,
		Store: store, Committer: c, Fence: newFence(), Config: cfg}))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []*Message{recv(t, out), recv(t, out), recv(t, out)}
	msgs[0].Ack()
	msgs[1].Ack()
	var r round
	done := make(chan struct{})
	go func() { c.commit(&r, nil); close(done) }()
	<-store.entered // the batch (offset 2) is under way
	msgs[2].Ack()   // the final commit would write 3
	stopped := make(chan error, 1)
	go func() { stopped <- m.Stop(true) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a batch of its partition was under way", err)
	case <-time.After(100 * time.Millisecond): // observation window
	}
	close(store.release)
	<-done
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	order := slices.Clone(store.order)
	store.mu.Unlock()
	if want := []string{"batch [2]", "commit 3"}; !slices.Equal(order, want) {
		t.Fatalf("writes %q, want %q", order, want)
	}
	if s := m.Stats(); s.Committed != 3 {
		t.Fatalf("committed %d, want 3", s.Committed)
	}
}

// TestFinalCommitReadsBack: Stop(true) commits with Commit (which the
// store reads back) what a routine commit wrote without reading back, even
// if nothing moved since; it does not when the offset came from the store.
func TestFinalCommitReadsBack(t *testing.T) {
	for _, routine := range []bool{true, false} {
		t.Run(fmt.Sprint("routine=", routine), func(t *testing.T) {
			per := 0
			if routine {
				per = 3
			}
			g := newGroup(t, 1, per)
			if routine {
				g.receive(t, 3, func(*Message) bool { return true })
				if b := g.commit(t); len(b) != 1 || b[0].Next != 3 {
					t.Fatalf("batch %v, want partition 0 at 3", b)
				}
			} else {
				waitFor(t, "the start position read", func() bool { return g.ms[0].Stats().Acked == 0 })
			}
			if err := g.ms[0].Stop(true); err != nil {
				t.Fatal(err)
			}
			g.store.mu.Lock()
			commits := slices.Clone(g.store.commits)
			g.store.mu.Unlock()
			want := []int64{3}
			if !routine {
				want = nil // the start offset, read from the store
			}
			if !slices.Equal(commits, want) {
				t.Fatalf("final commits %v, want %v", commits, want)
			}
		})
	}
}

// TestCommitterTrimsIdle: a partition that was idle for a whole interval
// gives its tracker's memory back; one that delivered meanwhile keeps it.
func TestCommitterTrimsIdle(t *testing.T) {
	g := newGroup(t, 1, 3)
	g.receive(t, 3, func(*Message) bool { return true })
	m := g.ms[0]
	capacity := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.tracker.Capacity()
	}
	if capacity() == 0 {
		t.Fatal("no ring after deliveries")
	}
	g.commit(t) // first visit while idle
	if capacity() == 0 {
		t.Fatal("trimmed on the first idle visit")
	}
	g.commit(t)
	if c := capacity(); c != 0 {
		t.Fatalf("capacity %d after an idle interval, want 0", c)
	}
}

// TestCommitterQuiet: a partition with nothing held and nothing to
// commit goes quiet, and the routine visits skip it, until offsets are
// taken for delivery again (whose acks the next visit commits) or a seek
// moves it (the visit commits the new position).
func TestCommitterQuiet(t *testing.T) {
	g := newGroup(t, 1, 3)
	m := g.ms[0]
	g.receive(t, 3, func(*Message) bool { return true })
	if got := asMap(t, g.commit(t)); got[0] != 3 {
		t.Fatalf("first commit %v, want 0:3", got)
	}
	if m.quiet.Load() {
		t.Fatal("quiet after a visit that committed")
	}
	g.commit(t) // idle for a whole interval: trimmed
	if !m.quiet.Load() {
		t.Fatal("not quiet after an idle interval with everything committed")
	}
	active := func() int {
		g.c.mu.Lock()
		defer g.c.mu.Unlock()
		return len(g.c.active)
	}
	if n := active(); n != 0 {
		t.Fatalf("%d managers in the rounds, want 0 (quiet)", n)
	}
	g.feeds.produce(0, 0, 2, 256)
	testcluster.Await(t, 10*time.Second, time.Millisecond, "the manager back in the rounds", func() bool { return active() == 1 })
	for range 2 {
		if r := recv(t, g.out).Ack(); r != AckOK {
			t.Fatalf("ack: %v", r)
		}
	}
	if got := asMap(t, g.commit(t)); got[0] != 5 {
		t.Fatalf("commit after new deliveries %v, want 0:5", got)
	}
	g.commit(t)
	if !m.quiet.Load() {
		t.Fatal("not quiet again")
	}
	if err := m.Seek(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	for range 4 { // 1..4 again, not acked
		recv(t, g.out)
	}
	if got := asMap(t, g.commit(t)); got[0] != 1 {
		t.Fatalf("commit after the seek %v, want 0:1", got)
	}
}

// TestCommitterClosed: Params without a Committer, or with a closed one,
// are refused; Close is idempotent.
func TestCommitterClosed(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	if _, err := NewCommitter(nil, NewConfig(), nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("NewCommitter(nil) = %v, want ErrConfig", err)
	}
	bad := NewConfig()
	bad.CommitInterval = 0
	if _, err := NewCommitter(&memStore{}, bad, nil); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "CommitInterval") {
		t.Fatalf("NewCommitter(bad config) = %v, want ErrConfig naming CommitInterval", err)
	}
	store := &memStore{}
	c, err := NewCommitter(store, NewConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Topic: "t", Client: noResolver{}, Fetcher: newFakeFetcher(), Store: store, Fence: newFence(),
		Batches: make(chan *Handout), Config: NewConfig()}
	if _, err := start(p); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Committer") {
		t.Fatalf("New without a Committer = %v, want ErrConfig naming Committer", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	p.Committer = c
	if m, err := start(p); !errors.Is(err, ErrCommitterClosed) {
		if m != nil {
			_ = m.Stop(false)
		}
		t.Fatalf("New with a closed Committer = %v, want ErrCommitterClosed", err)
	}
}

// TestCommitterTicks: on its own, the committer commits every interval.
func TestCommitterTicks(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	store, _, out, _, _ := committerRig(t, 2, 10*time.Millisecond)
	for range 4 {
		recv(t, out).Ack()
	}
	waitFor(t, "both partitions committed", func() bool { return store.get(0) == 2 && store.get(1) == 2 })
}

// TestCommitterSleepsWhileQuiet: once every partition is quiet the
// routine rounds stop, and a partition that delivers again starts them:
// its acks are committed without a Commit call.
func TestCommitterSleepsWhileQuiet(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	store, c, out, feeds, ms := committerRig(t, 1, 5*time.Millisecond)
	m := ms[0]
	for range 2 {
		recv(t, out).Ack()
	}
	waitFor(t, "the acks committed", func() bool { return store.get(0) == 2 })
	waitFor(t, "the rounds stopped", c.sleeping.Load)
	if !m.quiet.Load() {
		t.Fatal("the rounds stopped while the manager is not quiet")
	}
	feeds.produce(0, 2, 2, 16)
	for range 2 {
		recv(t, out).Ack()
	}
	waitFor(t, "the new acks committed by a routine round", func() bool { return store.get(0) == 4 })
	waitFor(t, "the rounds stopped again", c.sleeping.Load)
}

// committerRig starts a manager for each of partitions 0..n-1 of topic
// t, each fed 2 messages, on one Committer of the given interval over a
// memStore with offset 0 committed; they hand out on out and stop at the
// test's end.
func committerRig(t *testing.T, n int32, interval time.Duration) (*memStore, *Committer, chan *Message, *fakeFetcher, []*Manager) {
	t.Helper()
	store := &memStore{committed: map[int32]int64{}}
	for p := range n {
		store.committed[p] = 0
	}
	cfg := NewConfig()
	cfg.CommitInterval = interval
	c := committerFor(t, store, cfg)
	out := make(chan *Message, 10)
	feeds := feedsOf(int(n), 2)
	var ms []*Manager
	for p := range n {
		m, err := start(handOffTo(t, out, Params{Topic: "t", Partition: p, Client: noResolver{}, Fetcher: feeds,
			Store: store, Committer: c, Fence: newFence(), Config: cfg}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Stop(false) })
		ms = append(ms, m)
	}
	return store, c, out, feeds, ms
}

// waitFor awaits cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testcluster.Await(t, 10*time.Second, time.Millisecond, what, cond)
}

// TestCommitterHalt: after Halt, neither a routine round nor Commit sends
// a batch (Commit returns ErrCommitterClosed); the managers' final
// commits still commit.
func TestCommitterHalt(t *testing.T) {
	const n, per = 3, 2
	g := newGroup(t, n, per)
	g.receive(t, n*per, func(*Message) bool { return true })
	g.c.Halt()
	g.c.Halt() // idempotent
	if b := g.commit(t); b != nil {
		t.Fatalf("a routine round after Halt sent %v", b)
	}
	if err := g.c.Commit(context.Background()); !errors.Is(err, ErrCommitterClosed) {
		t.Fatalf("Commit after Halt = %v, want ErrCommitterClosed", err)
	}
	if got := len(g.store.batchLog()); got != 0 {
		t.Fatalf("%d batches after Halt, want 0", got)
	}
	for p, m := range g.ms {
		if err := m.Stop(true); err != nil {
			t.Fatal(err)
		}
		if got := g.store.get(int32(p)); got != per {
			t.Errorf("partition %d: final commit %d after Halt, want %d", p, got, per)
		}
	}
}

package manager_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager"
)

// phaseLog records when each debug message was logged, for phase timings,
// and passes warnings and errors on to next.
type phaseLog struct {
	next slog.Handler
	mu   *sync.Mutex
	at   map[string][]time.Time
}

func newPhaseLog(next slog.Handler) *phaseLog {
	return &phaseLog{next: next, mu: &sync.Mutex{}, at: map[string][]time.Time{}}
}

func (h *phaseLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *phaseLog) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	h.at[r.Message] = append(h.at[r.Message], r.Time)
	h.mu.Unlock()
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *phaseLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &phaseLog{next: h.next.WithAttrs(as), mu: h.mu, at: h.at}
}

func (h *phaseLog) WithGroup(name string) slog.Handler {
	return &phaseLog{next: h.next.WithGroup(name), mu: h.mu, at: h.at}
}

// report returns, for each message logged after from, its first and last
// time relative to from and how often it was logged, in order of the first.
func (h *phaseLog) report(from time.Time) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	type row struct {
		msg         string
		first, last time.Duration
		n           int
	}
	var rows []row
	for msg, ts := range h.at {
		var r row
		for _, at := range ts {
			if at.Before(from) {
				continue
			}
			d := at.Sub(from)
			if r.n == 0 || d < r.first {
				r.first = d
			}
			r.last = max(r.last, d)
			r.n++
		}
		if r.n > 0 {
			r.msg = msg
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return int(a.first - b.first) })
	s := ""
	for _, r := range rows {
		s += fmt.Sprintf("\n  %7.1f ms .. %7.1f ms  x%-4d %s", millis(r.first), millis(r.last), r.n, r.msg)
	}
	return s
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// TestCloseManyPartitions: two members share 200 partitions (100 each)
// under a session timeout of 30 s, and only Close or Commit commits
// (CommitInterval 1 h).
//
// a acked every message of its partitions and committed them (Commit):
// when its Close returns, none of its owner nodes is left, its offsets are
// committed, and b owns all 200 partitions well within the session
// timeout (it did not wait for a's session to expire).
//
// b then closes at once: its own 100 partitions have acked messages never
// committed, the 100 it just took over have nothing to commit and may
// still be reading their committed offsets. Neither kind may keep the
// other waiting: the final commits' round must not wait for the
// partitions without a final commit (nor for their reads), which wait in
// turn for the OnRevoked call that the committing partitions hold up.
// When b's Close returns every partition's offset is committed.
//
// The phases of both Closes are logged (for measurements: run with -v).
func TestCloseManyPartitions(t *testing.T) {
	c := testcluster.Shared(t)
	const parts = 200
	topic, group, sub := newTopic(t, c, parts)
	testcluster.MustProduce(t, c, topic, parts, 0, 10*parts)
	rec := newRecorder(t)
	member := func(name string, phases *phaseLog) *instance {
		return join(t, c, group, sub, name, rec, joinOpts{configure: func(cfg *manager.Config) {
			cfg.SessionTimeout = 30 * time.Second
			cfg.Partition.Initial = manager.InitialOldest
			cfg.Partition.CommitInterval = time.Hour // only Close and Commit commit
			cfg.Logger = slog.New(phases).With("test", t.Name(), "member", name)
		}})
	}
	phasesA, phasesB := newPhaseLog(testLogger(t).Handler()), newPhaseLog(testLogger(t).Handler())
	a, b := member("a", phasesA), member("b", phasesB)
	await(t, time.Minute, "balanced", func() bool { return balanced(parts, a, b) })
	await(t, time.Minute, "every message consumed", func() bool { return rec.Count(topic, 10*parts) == 10*parts })
	// As a routine commit would: the commit connection is open at Close,
	// as in a member that ran a while, and each final commit writes its
	// offset again to read it back.
	if err := a.c.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	aOwned := owned(a)["a"]
	hwm, err := c.HighWaterMarks(topic)
	if err != nil {
		t.Fatal(err)
	}
	checkCommitted := func(who string, tps []manager.TopicPartition) {
		t.Helper()
		got := committed(t, c, group, topic, parts)
		bad := 0
		for _, tp := range tps {
			if got[tp.Partition] != hwm[tp.Partition] {
				if bad < 5 {
					t.Errorf("partition %d: committed %d after %s's Close, acked up to %d", tp.Partition, got[tp.Partition], who, hwm[tp.Partition])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%d of %d partitions not committed by %s's Close", bad, len(tps), who)
		}
	}

	start := time.Now()
	if err := a.c.Close(); err != nil {
		t.Fatalf("close a: %v", err)
	}
	t.Logf("Close of a, owning %d partitions: %v; phases:%s", len(aOwned), time.Since(start), phasesA.report(start))
	a.wg.Wait()
	zc := testcluster.ZooKeeper(t, c)
	var left []string
	for _, tp := range aOwned {
		p := c.Chroot() + zkdata.OwnerPath(group, tp.Topic, tp.Partition)
		if data, _, err := zc.Get(p); err == nil && zkdata.ParseOwner(data) == "a" {
			left = append(left, p)
		}
	}
	if len(left) > 0 {
		t.Errorf("%d owner nodes of the closed member left after its Close, e.g. %s", len(left), left[0])
	}
	checkCommitted("a", aOwned)
	takeover := await(t, 10*time.Second, "b owns every partition", func() bool {
		s := b.c.Stats()
		return s.Ready && len(s.Partitions) == parts
	})
	t.Logf("b owned all %d partitions %v after a's Close returned", parts, takeover)

	start = time.Now()
	if err := b.c.Close(); err != nil {
		t.Fatalf("close b: %v", err)
	}
	t.Logf("Close of b, owning %d partitions: %v; phases:%s", parts, time.Since(start), phasesB.report(start))
	b.wg.Wait()
	all := make([]manager.TopicPartition, parts)
	for p := range all {
		all[p] = manager.TopicPartition{Topic: topic, Partition: int32(p)}
	}
	checkCommitted("b", all)
	rec.checkViolations(t)
}

package manager_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// countingHandler counts the log records whose message contains substr
// and passes every record on.
type countingHandler struct {
	slog.Handler
	substr string
	n      *atomic.Int64
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.substr) {
		h.n.Add(1)
	}
	if h.Handler.Enabled(ctx, r.Level) {
		return h.Handler.Handle(ctx, r)
	}
	return nil
}

func (h countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return countingHandler{h.Handler.WithAttrs(as), h.substr, h.n}
}

func (h countingHandler) WithGroup(g string) slog.Handler {
	return countingHandler{h.Handler.WithGroup(g), h.substr, h.n}
}

// TestPrefetchedStart: a member joining an empty group opens its
// partitions' fetchers during JoinSettle and uses them after the claims
// (every partition here), and consumes everything exactly once. Then two
// members start at the same moment: both prefetch, the plans differ while
// they settle, and still nothing is lost or delivered twice.
func TestPrefetchedStart(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, n = 4, 400
	topic, group, _ := newTopic(t, c, parts)
	testcluster.MustProduce(t, c, topic, parts, 0, n)
	sub, err := subscription.Static(topic)
	if err != nil {
		t.Fatal(err)
	}
	var used atomic.Int64
	led := newRecorder(t)
	a := joinPool(t, c, group, sub, "a", led, poolOpts{noHooks: true, configure: func(cfg *manager.Config) {
		// Time enough for a loaded machine to open every fetcher in it.
		cfg.JoinSettle = 2 * time.Second
		cfg.Logger = slog.New(countingHandler{cfg.Logger.Handler(), "using the fetch opened before the claim", &used})
	}})
	await(t, 60*time.Second, "everything consumed", func() bool { return led.Count(topic, n) == n })
	if got := used.Load(); got != parts {
		t.Errorf("%d partitions started on the consumer opened during the settle, want %d", got, parts)
	}
	a.close(t)
	led.CheckExactlyOnce(t, topic, n)

	// Two members at once, on a group of their own, from the same topic
	// and then more of it.
	group2 := group + "-2"
	led2 := newRecorder(t)
	b := joinPool(t, c, group2, sub, "b", led2, poolOpts{noHooks: true})
	d := joinPool(t, c, group2, sub, "d", led2, poolOpts{noHooks: true})
	testcluster.MustProduce(t, c, topic, parts, n, n)
	await(t, 90*time.Second, "both batches consumed", func() bool { return led2.Count(topic, 2*n) == 2*n })
	b.close(t)
	d.close(t)
	led2.CheckExactlyOnce(t, topic, 2*n)
}

// TestClaimPrefetchAfterLeave: when a member leaves, the member that takes
// its partitions (unowned when its plan saw them) opens their fetches
// while it claims them and starts each of them on its fetch; every
// message, also those produced after the leave, is read exactly once.
func TestClaimPrefetchAfterLeave(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, n = 6, 300
	topic, group, _ := newTopic(t, c, parts)
	sub, err := subscription.Static(topic)
	if err != nil {
		t.Fatal(err)
	}
	var used atomic.Int64
	led := newRecorder(t)
	a := joinPool(t, c, group, sub, "a", led, poolOpts{noHooks: true})
	b := joinPool(t, c, group, sub, "b", led, poolOpts{noHooks: true, configure: func(cfg *manager.Config) {
		cfg.Logger = slog.New(countingHandler{cfg.Logger.Handler(), "using the fetch opened before the claim", &used})
	}})
	await(t, 60*time.Second, "both members own partitions", func() bool {
		sa, sb := a.c.Stats(), b.c.Stats()
		return sa.Ready && sb.Ready && len(sa.Assigned) > 0 && len(sb.Assigned) > 0 && len(sa.Assigned)+len(sb.Assigned) == parts
	})
	testcluster.MustProduce(t, c, topic, parts, 0, n)
	await(t, 60*time.Second, "the first batch consumed", func() bool { return led.Count(topic, n) == n })
	moving := len(a.c.Stats().Assigned)
	before := used.Load()
	a.close(t)
	testcluster.MustProduce(t, c, topic, parts, n, n)
	await(t, 60*time.Second, "both batches consumed", func() bool { return led.Count(topic, 2*n) == 2*n })
	if got := used.Load() - before; got != int64(moving) {
		t.Errorf("%d of the %d partitions taken over started on the fetch opened during the claim", got, moving)
	}
	b.close(t)
	led.CheckExactlyOnce(t, topic, 2*n)
}

// readsSeen is what OnAssigned saw of the committed-offset reads (see
// assignedReads).
type readsSeen struct {
	read, used atomic.Int64 // log records counted
	// named: the partitions named in the calls that returned; during: the
	// reads counted when the last call returned.
	named, during atomic.Int64
}

// assignedReads returns an OnAssigned that waits (at most a minute) until
// r.read counts one committed-offset read for each partition named so
// far: the reads run beside the call.
func assignedReads(topic string, r *readsSeen) func(context.Context, *manager.Consumer, map[string][]int32) {
	var seen int64
	return func(ctx context.Context, _ *manager.Consumer, ps map[string][]int32) {
		seen += int64(len(ps[topic]))
		deadline := time.Now().Add(time.Minute)
		for r.read.Load() < seen && ctx.Err() == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // polling a log count
		}
		r.during.Store(r.read.Load())
		r.named.Store(seen)
	}
}

// TestCommittedReadWhileAssigned: with offsets in Kafka a member reads
// each partition's committed offset as soon as its claim is held, while
// OnAssigned waits and runs, and starts the partition there on the fetch
// opened then, without reading it again. A member joining a group whose
// last member left keeps the fetch it opened during JoinSettle (it starts
// there); one whose partitions another member releases opens it after
// the claim. Every message is read exactly once.
func TestCommittedReadWhileAssigned(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, n = 4, 200
	topic, group, _ := newTopic(t, c, parts)
	sub, err := subscription.Static(topic)
	if err != nil {
		t.Fatal(err)
	}
	led := newRecorder(t)
	first := joinPool(t, c, group, sub, "first", led, poolOpts{noHooks: true})
	testcluster.MustProduce(t, c, topic, parts, 0, n)
	await(t, 60*time.Second, "the first batch consumed", func() bool { return led.Count(topic, n) == n })
	first.close(t)

	join := func(name string, r *readsSeen) *poolInstance {
		return joinPool(t, c, group, sub, name, led, poolOpts{noHooks: true, configure: func(cfg *manager.Config) {
			h := countingHandler{cfg.Logger.Handler(), "read the committed offset after the claim", &r.read}
			cfg.Logger = slog.New(countingHandler{h, "using the fetch opened before the claim", &r.used})
			cfg.OnAssigned = assignedReads(topic, r)
		}})
	}
	var ra readsSeen
	a := join("a", &ra)
	await(t, 90*time.Second, "a told of every partition", func() bool { return ra.named.Load() == parts })
	if got := ra.during.Load(); got != parts {
		t.Errorf("a: %d of %d committed offsets read while OnAssigned ran", got, parts)
	}
	testcluster.MustProduce(t, c, topic, parts, n, n)
	await(t, 60*time.Second, "the second batch consumed", func() bool { return led.Count(topic, 2*n) == 2*n })
	if got := ra.used.Load(); got != parts {
		t.Errorf("a: %d of %d partitions started on the fetch opened before they started", got, parts)
	}

	var rb readsSeen
	b := join("b", &rb)
	await(t, 90*time.Second, "b told of the partitions it took", func() bool {
		return rb.named.Load() > 0 && rb.named.Load() == int64(len(b.c.Stats().Assigned)) && len(a.c.Stats().Assigned)+len(b.c.Stats().Assigned) == parts
	})
	moved := rb.named.Load()
	if got := rb.during.Load(); got != moved {
		t.Errorf("b: %d of %d committed offsets read while OnAssigned ran", got, moved)
	}
	testcluster.MustProduce(t, c, topic, parts, 2*n, n)
	await(t, 60*time.Second, "the third batch consumed", func() bool { return led.Count(topic, 3*n) == 3*n })
	if got := rb.used.Load(); got != moved {
		t.Errorf("b: %d of %d partitions started on the fetch opened after the claim", got, moved)
	}
	a.close(t)
	b.close(t)
	led.CheckExactlyOnce(t, topic, 3*n)
}

package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/fetch"
	public "github.com/zkgroup/zkgroup/partition"
	"go.uber.org/goleak"
)

// recvBatch receives a batch, failing after 10 s.
func recvBatch(t *testing.T, out <-chan *Handout) *Handout {
	t.Helper()
	return receive(t, out, "batch")
}

// noBatch fails if a batch comes within an observation window.
func noBatch(t *testing.T, out <-chan *Handout, what string) {
	t.Helper()
	select {
	case b := <-out:
		t.Fatalf("%s: a batch from offset %d was handed out", what, b.FirstOffset())
	case <-time.After(150 * time.Millisecond): // observation window for "nothing"
	}
}

// offsetsOf returns the offsets of b's messages.
func offsetsOf(b *Handout) []int64 {
	var out []int64
	for _, m := range b.Messages {
		out = append(out, m.Offset)
	}
	return out
}

// span returns from, from+1, ..., to.
func span(from, to int64) []int64 {
	var out []int64
	for o := from; o <= to; o++ {
		out = append(out, o)
	}
	return out
}

// reports collects what a Manager reports (up to its capacity; more are
// dropped, and it stays full).
type reports chan error

func (r reports) report(err error) {
	select {
	case r <- err:
	default:
	}
}

// next returns the next report, failing after 10 s.
func (r reports) next(t *testing.T) error { t.Helper(); return receive(t, r, "report") }

// fakeOf returns the fake fetcher of p.
func fakeOf(p Params) *fakeFetcher { return p.Fetcher.(*fakeFetcher) }

// TestOpenFetchPrefetched: a Fetch opened before the claim is used only
// when it covers where the claimed partition must start (the committed
// offset read after the claim, where it was opened or above: its records
// below are skipped; or the same Initial position when there is none:
// then at the offset it was opened at, with no new lookup), and closed
// otherwise before the partition is added again at the position.
func TestOpenFetchPrefetched(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pre      Prefetched
		pos      int64
		want     bool
		wantFrom int64
	}{
		{"same committed offset", Prefetched{Offset: 42}, 42, true, 42},
		{"committed offset moved on since", Prefetched{Offset: 42}, 57, true, 57},
		{"committed offset moved back since", Prefetched{Offset: 57}, 42, false, 42},
		{"committed since, none before", Prefetched{Offset: 0, Initial: sarama.OffsetOldest}, 0, true, 0},
		{"committed since, none before, above", Prefetched{Offset: 3, Initial: sarama.OffsetOldest}, 10, true, 10},
		{"committed since, none before, below", Prefetched{Offset: 10, Initial: sarama.OffsetOldest}, 3, false, 3},
		{"none committed, oldest", Prefetched{Offset: 7, Initial: sarama.OffsetOldest}, sarama.OffsetOldest, true, 7},
		{"none committed, newest", Prefetched{Offset: 90, Initial: sarama.OffsetNewest}, sarama.OffsetNewest, true, 90},
		{"committed before, none now", Prefetched{Offset: 42}, sarama.OffsetOldest, false, 0},
		{"initial policy differs", Prefetched{Offset: 7, Initial: sarama.OffsetOldest}, sarama.OffsetNewest, false, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeFetcher()
			f.produce(0, 0, 100, 100) // oldest 0, newest 100
			pre := tc.pre
			fp, err := f.Add("t", 0, pre.Offset)
			if err != nil {
				t.Fatal(err)
			}
			pre.FP = fp
			m := &Manager{topic: "t", log: slog.New(slog.DiscardHandler), p: Params{Client: f, Fetcher: f}}
			got, from, err := m.openFetch(&pre, tc.pos)
			if err != nil {
				t.Fatal(err)
			}
			if (got == fp) != tc.want {
				t.Fatalf("used = %v, want %v", got == fp, tc.want)
			}
			if from != tc.wantFrom {
				t.Errorf("starts at %d, want %d", from, tc.wantFrom)
			}
			adds, closes, open, _ := f.state(0)
			wantAdds := []fakeAdd{{0, pre.Offset}}
			if !tc.want {
				wantAdds = append(wantAdds, fakeAdd{0, tc.wantFrom})
			}
			if !slices.Equal(adds, wantAdds) || !open {
				t.Errorf("adds %v (open %v), want %v", adds, open, wantAdds)
			}
			if wantCloses := map[bool]int{true: 0, false: 1}[tc.want]; closes != wantCloses {
				t.Errorf("%d closed, want %d", closes, wantCloses)
			}
			if below := tc.want && from > pre.Offset; m.fetchBelow != below {
				t.Errorf("fetchBelow %v, want %v", m.fetchBelow, below)
			}
			opened := from // where the Fetch returned reads from
			if tc.want {
				opened = pre.Offset
			}
			r, err := got.Poll()
			switch {
			case err != nil:
				t.Errorf("the Fetch returned polls %v", err)
			case opened == 100 && r != nil:
				t.Errorf("the Fetch returned at the log end polls records from %d", r.NextOffset-int64(r.Len()))
			case opened < 100 && (r == nil || r.NextOffset != 100 || r.Len() != int(100-opened)):
				t.Errorf("the Fetch returned polls %v, want the records from %d", r, opened)
			}
		})
	}
}

// TestManagerUsesPrefetched: a Manager given a Fetch opened at its
// committed offset, or below it, hands out from the committed offset on
// it without adding the partition again (the records below are skipped);
// one opened above is closed and the partition added at the committed
// offset; Stop closes the Fetch in use (none is left open).
func TestManagerUsesPrefetched(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	for _, at := range []int64{5, 3, 7} {
		t.Run(fmt.Sprint("opened at ", at), func(t *testing.T) {
			m, _, _, out := setupBatches(t, 10, NewConfig(), func(p *Params) {
				fp, err := fakeOf(*p).Add("t", 0, at)
				if err != nil {
					t.Fatal(err)
				}
				p.Prefetched = &Prefetched{FP: fp, Offset: at}
			})
			f := fakeOf(m.p)
			if got := offsetsOf(recvBatch(t, out)); !slices.Equal(got, span(5, 14)) {
				t.Errorf("handed out %v, want 5..14", got)
			}
			adds, closes, _, _ := f.state(0)
			want := []fakeAdd{{0, at}}
			if at > 5 {
				want = append(want, fakeAdd{0, 5})
			}
			if !slices.Equal(adds, want) || closes != len(want)-1 {
				t.Errorf("adds %v, %d closed; want %v, %d", adds, closes, want, len(want)-1)
			}
			_ = m.Stop(false)
			if n := f.openFetches(); n != 0 {
				t.Errorf("%d Fetches open after Stop", n)
			}
		})
	}
}

// TestManagerPrefetchedBelowOutOfRange: a Fetch opened before the claim
// below the committed offset, at an offset the log no longer has
// (retention since), goes out of range there: the Manager fetches from
// the committed offset itself, which the log has, and does not apply the
// Initial policy (nothing reset, nothing skipped).
func TestManagerPrefetchedBelowOutOfRange(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cfg := NewConfig()
	cfg.Initial = public.InitialNewest // a reset would skip to the log end
	m, _, _, out := setupBatches(t, 10, cfg, func(p *Params) {
		fp, err := fakeOf(*p).Add("t", 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		fakeOf(*p).truncate(0, 4) // offsets 0..3 deleted; committed 5 is there
		p.Prefetched = &Prefetched{FP: fp, Offset: 2, At: 5, Read: true}
	})
	f := fakeOf(m.p)
	if got := offsetsOf(recvBatch(t, out)); !slices.Equal(got, span(5, 14)) {
		t.Errorf("handed out %v, want 5..14", got)
	}
	if s := m.Stats(); s.Resets != 0 {
		t.Errorf("%d resets, want none", s.Resets)
	}
	adds, closes, _, _ := f.state(0)
	if want := []fakeAdd{{0, 2}, {0, 5}}; !slices.Equal(adds, want) || closes != 1 {
		t.Errorf("adds %v, %d closed; want %v, 1 closed", adds, closes, want)
	}
	_ = m.Stop(false)
}

// readCounter counts a Store's Fetch calls.
type readCounter struct {
	Store
	n *atomic.Int64
}

func (s readCounter) Fetch(ctx context.Context, topic string, partition int32) (int64, bool, error) {
	s.n.Add(1)
	return s.Store.Fetch(ctx, topic, partition)
}

// TestManagerStartsWhereReadAfterClaim: a Prefetched marked Read (its
// slot read the committed offset after the claim and opened it there)
// starts the Manager on it without reading the store again, and that
// offset counts as committed: nothing is committed until something is
// acked. Not marked, the Manager reads the store and starts where it says
// (here below where the Fetch was opened, so on a Fetch of its own).
func TestManagerStartsWhereReadAfterClaim(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	for _, read := range []bool{true, false} {
		t.Run(fmt.Sprint("read ", read), func(t *testing.T) {
			var reads atomic.Int64
			m, store, _, out := setupBatches(t, 10, NewConfig(), func(p *Params) {
				p.Store = readCounter{p.Store, &reads}
				fp, err := fakeOf(*p).Add("t", 0, 8)
				if err != nil {
					t.Fatal(err)
				}
				p.Prefetched = &Prefetched{FP: fp, Offset: 8, Read: read}
			})
			from, wantReads := int64(8), int64(0)
			if !read {
				from, wantReads = 5, 1 // the store's committed offset
			}
			if got := offsetsOf(recvBatch(t, out)); !slices.Equal(got, span(from, 14)) {
				t.Errorf("handed out %v, want %d..14", got, from)
			}
			if got := reads.Load(); got != wantReads {
				t.Errorf("%d reads of the committed offset, want %d", got, wantReads)
			}
			_ = m.Stop(false)
			store.mu.Lock()
			commits := slices.Clone(store.commits)
			store.mu.Unlock()
			if len(commits) != 0 {
				t.Errorf("nothing acked, yet committed %v", commits)
			}
		})
	}
}

// TestNewFailureClosesPrefetched: the Manager owns Params.Prefetched
// from New on: a New that fails closes its Fetch.
func TestNewFailureClosesPrefetched(t *testing.T) {
	for name, edit := range map[string]func(*Params){
		"no batch channel": func(p *Params) { p.Batches = nil },
		"bad config":       func(p *Params) { p.Config.MaxUnacked = 0 },
		"committer closed": func(p *Params) { _ = p.Committer.Close() },
	} {
		t.Run(name, func(t *testing.T) {
			p, _, _ := fakedPartition(t, 3, NewConfig())
			p.Batches = make(chan *Handout)
			f := fakeOf(p)
			fp, err := f.Add("t", 0, 5)
			if err != nil {
				t.Fatal(err)
			}
			p.Prefetched = &Prefetched{FP: fp, Offset: 5}
			edit(&p)
			if m, err := start(p); err == nil {
				_ = m.Stop(false)
				t.Fatal("New succeeded")
			}
			if n := f.openFetches(); n != 0 {
				t.Errorf("the prefetched Fetch is still open after a failed New")
			}
		})
	}
}

// TestManagerOutOfRangeResets: a committed offset the log no longer has
// (retention) is reset by the Initial policy: oldest starts at the log
// start, newest at its end (and hands out what comes after); the reset is
// counted and reported, the out-of-range fetch closed before the
// partition is added again.
func TestManagerOutOfRangeResets(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	for _, initial := range []public.Initial{public.InitialOldest, public.InitialNewest} {
		t.Run(string(initial), func(t *testing.T) {
			cfg := NewConfig()
			cfg.Initial = initial
			rep := make(reports, 10)
			m, _, _, out := setupBatches(t, 10, cfg, func(p *Params) {
				p.Report = rep.report
				fakeOf(*p).truncate(0, 8) // offsets 0..7 deleted
			})
			f := fakeOf(m.p)
			want := span(8, 14)
			if initial == public.InitialNewest {
				waitFor(t, "the partition added at the log end", func() bool {
					adds, _, _, _ := f.state(0)
					return len(adds) == 2
				})
				f.produce(0, 0, 3, 3)
				want = span(15, 17)
			}
			b := recvBatch(t, out)
			if got := offsetsOf(b); !slices.Equal(got, want) {
				t.Fatalf("handed out %v, want %v", got, want)
			}
			err := rep.next(t)
			if !errors.Is(err, ErrReset) {
				t.Errorf("reported %v, want ErrReset", err)
			}
			if s := m.Stats(); s.Resets != 1 || s.FetchErrors != 1 {
				t.Errorf("stats: %d resets, %d fetch errors; want 1, 1", s.Resets, s.FetchErrors)
			}
			adds, closes, _, _ := f.state(0)
			wantAdd := map[public.Initial]int64{public.InitialOldest: 8, public.InitialNewest: 15}[initial]
			if !slices.Equal(adds, []fakeAdd{{0, 5}, {0, wantAdd}}) || closes != 1 {
				t.Errorf("adds %v, %d closed; want at 5 then %d, 1 closed", adds, closes, wantAdd)
			}
			_ = m.Stop(false)
		})
	}
}

// TestManagerSeek: a seek closes the fetch and adds the partition again at
// the target (oldest resolved by the client): the next batch starts
// there, the batch handed out before is dropped by Pass and its acks are
// no-ops; a seek while the manager waits for MaxUnacked room applies too.
func TestManagerSeek(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cfg := NewConfig()
	cfg.MaxUnacked = 10
	m, _, _, out := setupBatches(t, 10, cfg, nil)
	f := fakeOf(m.p)
	old := recvBatch(t, out)
	if got := offsetsOf(old); !slices.Equal(got, span(5, 14)) {
		t.Fatalf("handed out %v, want 5..14", got)
	}
	// MaxUnacked reached: the manager waits for room. Seek back.
	if err := m.Seek(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if got := offsetsOf(recvBatch(t, out)); !slices.Equal(got, span(2, 11)) {
		t.Errorf("after Seek(2) handed out %v, want 2..11", got)
	}
	if r := old.Pass(context.Background(), 0); r == PassOK {
		t.Error("a batch handed out before the seek still passes")
	}
	if r := old.Messages[9].Ack(); r == AckOK {
		t.Errorf("ack of offset 14 from before the seek = %v, want a no-op", r)
	}
	if err := m.Seek(context.Background(), sarama.OffsetOldest); err != nil {
		t.Fatal(err)
	}
	if got := recvBatch(t, out); got.FirstOffset() != 0 || got.Len() != 10 {
		t.Errorf("after Seek(oldest) handed out %v, want 0..9", offsetsOf(got))
	}
	adds, closes, open, _ := f.state(0)
	if !slices.Equal(adds, []fakeAdd{{0, 5}, {0, 2}, {0, 0}}) || closes != 2 || !open {
		t.Errorf("adds %v, %d closed (open %v); want at 5, 2, 0, 2 closed, one open", adds, closes, open)
	}
	_ = m.Stop(false)
	if n := f.openFetches(); n != 0 {
		t.Errorf("%d Fetches open after Stop", n)
	}
}

// TestManagerPause: Pause withdraws the batch being offered and closes
// the fetch (a paused partition is not fetched): nothing is handed out
// while paused, even as records arrive; Resume fetches again from the
// first offset not handed out, skipping and repeating nothing.
func TestManagerPause(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m, _, _, out := setupBatches(t, 10, NewConfig(), nil)
	f := fakeOf(m.p)
	// The first batch (5..14) is being offered; nobody receives it yet.
	waitFor(t, "the first share taken", func() bool { _, _, _, polled := f.state(0); return polled == 1 })
	if err := m.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, open, _ := f.state(0); open {
		t.Error("the partition is still fetched while paused")
	}
	f.produce(0, 0, 5, 5) // 15..19
	noBatch(t, out, "paused")
	if s := m.Stats(); s.Delivered != 0 || s.Unacked != 0 {
		t.Errorf("stats while paused: %d delivered, %d unacked; want 0, 0", s.Delivered, s.Unacked)
	}
	m.Resume()
	var got []int64
	for len(got) < 15 {
		b := recvBatch(t, out)
		got = append(got, offsetsOf(b)...)
		b.Ack()
	}
	if !slices.Equal(got, span(5, 19)) {
		t.Errorf("after Resume handed out %v, want 5..19", got)
	}
	if adds, _, _, _ := f.state(0); !slices.Equal(adds, []fakeAdd{{0, 5}, {0, 5}}) {
		t.Errorf("adds %v, want at 5 twice", adds)
	}
	_ = m.Stop(false)
}

// TestManagerFetchErrors: a report (fetch.ErrFetch) is counted and passed
// on and fetching goes on; a failed start is retried with backoff; a stop
// (a batch over the size limit) is counted and reported once, with no
// busy loop and nothing handed out, until a seek moves past it; a closed
// fetcher ends the manager.
func TestManagerFetchErrors(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cfg := NewConfig()
	cfg.RetryBackoff, cfg.RetryBackoffMax = time.Millisecond, 2*time.Millisecond
	rep := make(reports, 10)
	m, _, _, out := setupBatches(t, 10, cfg, func(p *Params) {
		p.Report = rep.report
		fakeOf(*p).addErrs = 2
	})
	f := fakeOf(m.p)
	for range 2 {
		if err := rep.next(t); !errors.Is(err, ErrFetch) || !errors.Is(err, fetch.ErrFetch) {
			t.Errorf("a failed start reported %v, want ErrFetch", err)
		}
	}
	recvBatch(t, out).Ack() // 5..14
	if s := m.Stats(); s.FetchErrors != 2 {
		t.Errorf("%d fetch errors after two failed starts, want 2", s.FetchErrors)
	}

	leader := fmt.Errorf("%w: leader moved", fetch.ErrFetch)
	waitFor(t, "the fetch open", func() bool { return f.fail(0, leader) })
	if err := rep.next(t); !errors.Is(err, ErrFetch) || !errors.Is(err, leader) {
		t.Errorf("reported %v, want ErrFetch wrapping the report", err)
	}
	f.produce(0, 0, 2, 2) // 15, 16
	if got := offsetsOf(recvBatch(t, out)); !slices.Equal(got, []int64{15, 16}) {
		t.Errorf("after a report handed out %v, want 15, 16", got)
	}

	tooLarge := fmt.Errorf("%w: 2 MiB at 17", fetch.ErrMessageTooLarge)
	f.fail(0, tooLarge)
	f.produce(0, 0, 3, 3) // 17..19, not fetched: the partition is stopped
	if err := rep.next(t); !errors.Is(err, ErrFetch) || !errors.Is(err, fetch.ErrMessageTooLarge) {
		t.Errorf("reported %v, want ErrFetch wrapping ErrMessageTooLarge", err)
	}
	noBatch(t, out, "stopped by a batch over the limit")
	if s := m.Stats(); s.FetchErrors != 4 || len(rep) != 0 {
		t.Errorf("%d fetch errors, %d more reports; want 4, none (reported once, no busy loop)", s.FetchErrors, len(rep))
	}
	if err := m.Seek(context.Background(), 18); err != nil {
		t.Fatal(err)
	}
	if got := offsetsOf(recvBatch(t, out)); !slices.Equal(got, []int64{18, 19}) {
		t.Errorf("after the seek past it handed out %v, want 18, 19", got)
	}

	f.fail(0, fetch.ErrClosed) // the consumer closed the fetcher
	select {
	case <-m.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the manager goes on after its fetcher closed")
	}
	_ = m.Stop(false)
}

// TestManagerTakesNoMoreWhileFull: a share larger than MaxUnacked room is
// handed out in batches of what fits, never a batch across two shares
// (each share is one slab), and while the manager waits for acks it takes
// no further share from the fetcher (which then leaves the partition out
// of its requests): besides the MaxUnacked messages handed out, a
// partition holds at most the share it is handing out.
func TestManagerTakesNoMoreWhileFull(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cfg := NewConfig()
	cfg.MaxUnacked = 4
	// Offsets 0..4 (before the committed 5), then shares 5..14, 15..24, 25..34.
	m, _, _, out := setupBatches(t, 0, cfg, func(p *Params) { fakeOf(*p).produce(0, 0, 30, 10) })
	f := fakeOf(m.p)
	var got []int64
	for len(got) < 30 {
		b := recvBatch(t, out)
		if b.Len() > 4 {
			t.Fatalf("a batch of %d with MaxUnacked 4", b.Len())
		}
		if (b.FirstOffset()-5)/10 != (b.LastOffset()-5)/10 {
			t.Fatalf("a batch %d..%d across two shares", b.FirstOffset(), b.LastOffset())
		}
		got = append(got, offsetsOf(b)...)
		if s := m.Stats(); s.Unacked > 4 {
			t.Fatalf("%d unacked with MaxUnacked 4", s.Unacked)
		}
		if len(got) == 4 { // no room left: the manager holds 9..14 of its share
			noBatch(t, out, "MaxUnacked reached")
		}
		if _, _, _, polled := f.state(0); polled > len(got)/10+1 {
			t.Fatalf("%d shares taken with %d messages handed out and MaxUnacked 4: more than the one being handed out", polled, len(got))
		}
		b.Ack()
	}
	if !slices.Equal(got, span(5, 34)) {
		t.Errorf("handed out %v, want 5..34", got)
	}
	_ = m.Stop(false)
}

// TestManagerCompactedShares: shares with gaps in their offsets (a
// compacted log) and shares without (tracked as a run in one call) are
// handed out whole and in order, MaxUnacked at a time, and acked through
// to a commit after the last offset.
func TestManagerCompactedShares(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cfg := NewConfig()
	cfg.MaxUnacked = 3
	m, store, _, out := setupBatches(t, 0, cfg, func(p *Params) {
		f := fakeOf(*p)
		f.produceDeltas(0, []int64{0, 2, 3, 7}) // 5, 7, 8, 12
		f.produce(0, 13, 4, 4)                  // 13..16
		f.produceDeltas(0, []int64{0, 1, 5})    // 17, 18, 22
	})
	var got []int64
	want := []int64{5, 7, 8, 12, 13, 14, 15, 16, 17, 18, 22}
	for len(got) < len(want) {
		b := recvBatch(t, out)
		if b.Len() > 3 {
			t.Fatalf("a batch of %d with MaxUnacked 3", b.Len())
		}
		got = append(got, offsetsOf(b)...)
		if r := b.Ack(); r != AckOK {
			t.Fatalf("Ack of %v: %v", offsetsOf(b), r)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("handed out %v, want %v", got, want)
	}
	if err := m.Stop(true); err != nil {
		t.Fatal(err)
	}
	if c := store.get(0); c != 23 {
		t.Errorf("committed %d after the last offset acked, want 23", c)
	}
}

// TestManagerTruncationReported: a truncation below the position (an
// unclean leader election, found by the fetcher) is reported with Op fetch,
// wrapping ErrTruncated with both offsets, before the reset the Initial
// policy makes of it.
func TestManagerTruncationReported(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	rep := make(reports, 10)
	m, _, _, out := setupBatches(t, 10, NewConfig(), func(p *Params) { p.Report = rep.report })
	b := recvBatch(t, out)
	f := fakeOf(m.p)
	next := b.LastOffset() + 1
	if !f.fail(0, &fetch.TruncationError{Topic: "t", Partition: 0, Offset: next, EndOffset: next - 3}) {
		t.Fatal("no open fetch to fail")
	}
	err := rep.next(t)
	var pe *Error
	if !errors.Is(err, ErrTruncated) || !errors.As(err, &pe) || pe.Op != "fetch" {
		t.Fatalf("reported %v; want a fetch *Error wrapping ErrTruncated", err)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("position %d", next)) || !strings.Contains(msg, fmt.Sprintf("ends at %d", next-3)) {
		t.Errorf("report %q does not give both offsets", msg)
	}
	if err := rep.next(t); !errors.Is(err, ErrReset) {
		t.Errorf("then reported %v, want the reset", err)
	}
	_ = m.Stop(false)
}

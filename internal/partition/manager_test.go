package partition

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/offsets"
	"go.uber.org/goleak"
)

type memStore struct {
	mu        sync.Mutex
	committed map[int32]int64
	commits   []int64            // of Commit
	logging   bool               // keep batches
	batches   [][]offsets.Offset // CommitBatch calls, when logging
	fail      map[int32]error    // CommitBatch fails these partitions
	released  bool
}

func (s *memStore) Fetch(_ context.Context, _ string, p int32) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.committed[p]
	return v, ok, nil
}

func (s *memStore) Commit(_ context.Context, _ string, p int32, next int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.committed == nil {
		s.committed = map[int32]int64{}
	}
	s.committed[p] = next
	s.commits = append(s.commits, next)
	return nil
}

func (s *memStore) CommitBatch(_ context.Context, batch []offsets.Offset) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logging {
		s.batches = append(s.batches, slices.Clone(batch))
	}
	errs := make([]error, len(batch))
	for i, o := range batch {
		if err := s.fail[o.Partition]; err != nil {
			errs[i] = err
			continue
		}
		if s.committed == nil {
			s.committed = map[int32]int64{}
		}
		s.committed[o.Partition] = o.Next
	}
	return errs
}

// batchLog returns the batches CommitBatch was called with.
func (s *memStore) batchLog() [][]offsets.Offset {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

func (s *memStore) Release(context.Context, string, int32) error {
	s.mu.Lock()
	s.released = true
	s.mu.Unlock()
	return nil
}

func (s *memStore) get(p int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed[p]
}

// testFence is a switchable fence.
type testFence struct {
	mu        sync.Mutex
	up, down  chan struct{}
	lost      chan struct{}
	lostCtx   context.Context // canceled by lose, with lost
	cancel    context.CancelFunc
	unwatched atomic.Int32 // AfterLost registrations taken back
	// expired makes Lease say false while the channels still say
	// healthy, as after a pause nobody noticed yet; Lease then shuts
	// Ready, as the contract asks. leaseCalls counts Lease calls.
	expired    atomic.Bool
	leaseCalls atomic.Int64
	// leaseEnd, when set, is the lease's end: Lease says true until then
	// with that end, and afterwards acts as expired does.
	leaseEnd atomic.Pointer[time.Time]
}

func newFence() *testFence {
	f := &testFence{up: make(chan struct{}), down: make(chan struct{}), lost: make(chan struct{})}
	f.lostCtx, f.cancel = context.WithCancel(context.Background())
	close(f.up)
	return f
}

// lose ends the ownership for good.
func (f *testFence) lose() { close(f.lost); f.cancel() }

func (f *testFence) AfterLost(fn func()) func() bool {
	stop := context.AfterFunc(f.lostCtx, fn)
	return func() bool {
		ok := stop()
		if ok {
			f.unwatched.Add(1)
		}
		return ok
	}
}

func (f *testFence) Ready() <-chan struct{}     { f.mu.Lock(); defer f.mu.Unlock(); return f.up }
func (f *testFence) Suspended() <-chan struct{} { f.mu.Lock(); defer f.mu.Unlock(); return f.down }
func (f *testFence) Lost() <-chan struct{}      { return f.lost }

// Token is the test fence's fencing token: none.
func (f *testFence) Token() int64 { return 0 }

// Lease holds while the fence is up and not lost; its end is an hour
// away (these tests switch the fence by hand), or leaseEnd.
func (f *testFence) Lease() (time.Time, bool) {
	f.leaseCalls.Add(1)
	select {
	case <-f.lost:
		return time.Time{}, false
	default:
	}
	end := f.leaseEnd.Load()
	if f.expired.Load() || end != nil && !time.Now().Before(*end) {
		f.mu.Lock()
		select {
		case <-f.up: // still open: shut it
			f.up = make(chan struct{})
			close(f.down)
		default:
		}
		f.mu.Unlock()
		return time.Time{}, false
	}
	select {
	case <-f.Ready():
		if end != nil {
			return *end, true
		}
		return time.Now().Add(time.Hour), true
	default:
		return time.Time{}, false
	}
}
func (f *testFence) suspend() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.up = make(chan struct{})
	close(f.down)
}
func (f *testFence) resume() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.up)
	f.down = make(chan struct{})
}

// committerFor returns a Committer on store, closed when the test ends
// (after the managers' Stop in later cleanups).
func committerFor(t testing.TB, store Store, cfg Config) *Committer {
	t.Helper()
	c, err := NewCommitter(store, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

type noResolver struct{}

func (noResolver) GetOffset(string, int32, int64) (int64, error) { return 0, nil }

// leakChecked runs test as a subtest, checking for leaked goroutines after
// its cleanups (handOffTo's adapter among them).
func leakChecked(t *testing.T, test func(t *testing.T)) {
	t.Run("batches", func(t *testing.T) {
		t.Cleanup(func() { goleak.VerifyNone(t) })
		test(t)
	})
}

// handOffTo returns p handing out on a batch channel, and a goroutine of
// the test (ended by its cleanup) that passes each batch's messages on out
// one by one, as Consumer.Each does: each message only once Handout.Pass
// allows it, and p.BeforeDrain abandons what it had not passed on when the
// manager stops with a drain.
func handOffTo(t *testing.T, out chan *Message, p Params) Params {
	t.Helper()
	bch := make(chan *Handout)
	p.Batches = bch
	stop, done := make(chan struct{}), make(chan struct{})
	var once sync.Once
	end := func() { once.Do(func() { close(stop) }); <-done }
	p.BeforeDrain = end
	t.Cleanup(end)
	go func() {
		defer close(done)
		for {
			var b *Handout
			select {
			case b = <-bch:
			case <-stop:
				return
			}
			for i, msg := range b.Messages {
				if b.Pass(context.Background(), i) != PassOK {
					break // dropped: Pass abandoned the rest
				}
				select {
				case out <- msg:
				case <-stop:
					b.abandonFrom(i)
					return
				}
			}
		}
	}()
	return p
}

// fakedPartition returns the Params of partition t/0, committed at 5,
// whose fake fetcher (p.Fetcher, also p.Client) holds offsets 0 to 5+n-1
// in one record batch: a fetch at 5 gets the n messages from 5 as one
// share. With store and fence.
func fakedPartition(t *testing.T, n int, cfg Config) (Params, *memStore, *testFence) {
	t.Helper()
	f := newFakeFetcher()
	f.produce(0, 0, 5+n, 5+n)
	store := &memStore{committed: map[int32]int64{0: 5}}
	fence := newFence()
	return Params{Topic: "t", Partition: 0, Client: f, Fetcher: f,
		Store: store, Committer: committerFor(t, store, cfg), Fence: fence, Config: cfg}, store, fence
}

func setup(t *testing.T, n int, cfg Config) (*Manager, *memStore, *testFence, chan *Message) {
	t.Helper()
	p, store, fence := fakedPartition(t, n, cfg)
	out := make(chan *Message)
	m, err := start(handOffTo(t, out, p))
	if err != nil {
		t.Fatal(err)
	}
	return m, store, fence, out
}

// setupBatches starts a manager handing out n faked messages as batches,
// with edit (may be nil) applied to its Params first.
func setupBatches(t *testing.T, n int, cfg Config, edit func(*Params)) (*Manager, *memStore, *testFence, chan *Handout) {
	t.Helper()
	p, store, fence := fakedPartition(t, n, cfg)
	out := make(chan *Handout)
	p.Batches = out
	if edit != nil {
		edit(&p)
	}
	m, err := start(p)
	if err != nil {
		t.Fatal(err)
	}
	return m, store, fence, out
}

// awaitDelivered polls, for up to 5 s, until m counts n deliveries: the
// sender counts one once its send returned, after the receiver has it.
// The caller checks the count.
func awaitDelivered(m *Manager, n uint64) {
	testcluster.Poll(5*time.Second, time.Millisecond, func() bool { return m.Stats().Delivered == n })
}

// receive receives from ch, failing with "no <what>" after 10 s.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no " + what)
		var zero T
		return zero
	}
}

// ackedAroundSecond returns a manager of 4 messages that commits only at
// Stop (with a drain of drainTimeout) and has handed out the first three:
// the first and third acked, the second (returned) not settled.
func ackedAroundSecond(t *testing.T, drainTimeout time.Duration) (*Manager, *memStore, *Message) {
	t.Helper()
	cfg := NewConfig()
	cfg.CommitInterval = time.Hour
	cfg.DrainTimeout = drainTimeout
	m, store, _, out := setup(t, 4, cfg)
	a, b, c := recv(t, out), recv(t, out), recv(t, out)
	a.Ack()
	c.Ack()
	return m, store, b
}

// stopPromptly stops m with a drain, which must succeed without waiting
// (10 s at most) for what what names.
func stopPromptly(t *testing.T, m *Manager, what string) {
	t.Helper()
	start := time.Now()
	if err := m.Stop(true); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Stop took %v %s", d, what)
	}
}

// wantCommitted checks store's committed offset of partition 0.
func wantCommitted(t *testing.T, store *memStore, want int64, why string) {
	t.Helper()
	if got := store.get(0); got != want {
		t.Errorf("committed %d, want %d: %s", got, want, why)
	}
}

func recv(t *testing.T, out <-chan *Message) *Message { t.Helper(); return receive(t, out, "message") }

func TestManagerAcksCommitsAndDrains(t *testing.T) {
	leakChecked(t, func(t *testing.T) {
		cfg := NewConfig()
		cfg.CommitInterval = time.Hour // only the final commit
		m, store, _, out := setup(t, 10, cfg)
		var msgs []*Message
		for i := 0; i < 10; i++ {
			msgs = append(msgs, recv(t, out))
		}
		if msgs[0].Offset != 5 || msgs[9].Offset != 14 {
			t.Fatalf("offsets %d..%d, want 5..14 (from the committed offset)", msgs[0].Offset, msgs[9].Offset)
		}
		// Ack out of order, leaving offset 8 unacked.
		for _, i := range []int{9, 0, 2, 1, 4, 5, 6, 7, 8} {
			if i == 3 {
				continue
			}
			if r := msgs[i].Ack(); r != AckOK {
				t.Fatalf("ack %d: %v", msgs[i].Offset, r)
			}
		}
		if r := msgs[0].Ack(); r == AckOK {
			t.Errorf("second ack of offset 5 = %v, want a no-op", r)
		}
		done := make(chan error, 1)
		go func() { done <- m.Stop(true) }()
		// The drain waits for offset 8; ack it late.
		time.Sleep(50 * time.Millisecond) // let Stop reach its drain before the last ack
		if r := msgs[3].Ack(); r != AckOK {
			t.Fatalf("late ack: %v", r)
		}
		if err := <-done; err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if got := store.get(0); got != 15 {
			t.Errorf("committed %d after the drain, want 15", got)
		}
		if r := msgs[3].Ack(); r != AckStale {
			t.Errorf("ack after Stop = %v, want stale", r)
		}
		if !store.released {
			t.Error("store not released")
		}
	})
}

func TestManagerCommitsOnlyUpToFirstUnacked(t *testing.T) {
	leakChecked(t, func(t *testing.T) {
		m, store, b := ackedAroundSecond(t, 50*time.Millisecond) // b stays unacked
		err := m.Stop(true)
		if !errors.Is(err, ErrDrainLate) {
			t.Errorf("Stop = %v, want ErrDrainLate", err)
		}
		wantCommitted(t, store, b.Offset, "the first unacked offset")
	})
}

func TestManagerBackpressure(t *testing.T) {
	leakChecked(t, func(t *testing.T) {
		cfg := NewConfig()
		cfg.MaxUnacked = 3
		m, _, _, out := setup(t, 10, cfg)
		got := []*Message{recv(t, out), recv(t, out), recv(t, out)}
		select {
		case extra := <-out:
			t.Fatalf("a 4th message (offset %d) was handed out with 3 unacked", extra.Offset)
		case <-time.After(200 * time.Millisecond): // observation window for "nothing more"
		}
		got[0].Ack()
		if next := recv(t, out); next.Offset != 8 {
			t.Errorf("after an ack got offset %d, want 8", next.Offset)
		}
		awaitDelivered(m, 4)
		if s := m.Stats(); s.Unacked != 3 || s.Delivered != 4 {
			t.Errorf("stats: unacked %d delivered %d, want 3 and 4", s.Unacked, s.Delivered)
		}
		_ = m.Stop(false)
	})
}

func TestManagerHoldsBackWhileSuspended(t *testing.T) {
	leakChecked(t, func(t *testing.T) {
		m, store, fence, out := setup(t, 5, NewConfig())
		first := recv(t, out)
		first.Ack()
		fence.suspend()
		// The batch holder may have passed offset 6 on before the
		// suspension; once it waits, nothing more is handed out.
		want := int64(6)
		waitFor(t, "the manager holding back", func() bool {
			select {
			case raced := <-out:
				if raced.Offset != 6 {
					t.Fatalf("offset %d handed out while suspended", raced.Offset)
				}
				want = 7
			default:
			}
			return m.Stats().Suspended
		})
		select {
		case extra := <-out:
			t.Fatalf("offset %d handed out while suspended", extra.Offset)
		case <-time.After(200 * time.Millisecond): // observation window
		}
		if _, _, ok, _ := m.beginCommit(); ok {
			m.endCommit(0, errors.New("test"))
			t.Error("commit allowed while suspended")
		}
		if err := m.finalCommit(); !errors.Is(err, ErrSuspended) {
			t.Errorf("final commit while suspended: %v, want ErrSuspended", err)
		}
		fence.resume()
		if next := recv(t, out); next.Offset != want {
			t.Errorf("after resuming got %d, want %d (nothing skipped)", next.Offset, want)
		}
		_ = m.Stop(false)
		if got := store.get(0); got != 5 {
			t.Errorf("committed %d by a Stop without drain, want the initial 5", got)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	if err := NewConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for field, mod := range map[string]func(*Config){
		"MaxUnacked":      func(c *Config) { c.MaxUnacked = 0 },
		"CommitInterval":  func(c *Config) { c.CommitInterval = 0 },
		"DrainTimeout":    func(c *Config) { c.DrainTimeout = -1 },
		"CommitTimeout":   func(c *Config) { c.CommitTimeout = 0 },
		"Initial":         func(c *Config) { c.Initial = "latest" },
		"RetryBackoff":    func(c *Config) { c.RetryBackoff = 0 },
		"RetryBackoffMax": func(c *Config) { c.RetryBackoffMax = time.Nanosecond },
	} {
		c := NewConfig()
		mod(&c)
		err := c.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}

func TestManagerAbandonEndsTheDrain(t *testing.T) {
	leakChecked(t, func(t *testing.T) {
		m, store, b := ackedAroundSecond(t, time.Minute)
		b.Abandon() // failed for good: the drain must not wait a minute for it
		stopPromptly(t, m, "with the only unacked message abandoned")
		wantCommitted(t, store, b.Offset, "an abandoned message is not committed")
	})
}

// TestManagerStopForgetsWhatWasNotHandedOut: the messages of a batch that
// never reached the user, abandoned before the drain (Params.BeforeDrain,
// as Consumer.Each does with what it holds), are not waited for by the
// drain and not committed past.
func TestManagerStopForgetsWhatWasNotHandedOut(t *testing.T) {
	leakChecked(t, func(t *testing.T) {
		cfg := NewConfig()
		cfg.CommitInterval = time.Hour
		cfg.DrainTimeout = time.Minute
		m, store, _, out := setup(t, 10, cfg)
		got := []*Message{recv(t, out), recv(t, out), recv(t, out)}
		for _, msg := range got {
			if r := msg.Ack(); r != AckOK {
				t.Fatalf("ack %d: %v", msg.Offset, r)
			}
		}
		awaitDelivered(m, 10) // one batch
		if s := m.Stats(); s.Unacked != 7 || s.LastFetched != 14 || s.Acked != 8 {
			t.Errorf("stats: unacked %d, last fetched %d, acked %d; want 7, 14, 8",
				s.Unacked, s.LastFetched, s.Acked)
		}
		stopPromptly(t, m, "with messages never handed out")
		wantCommitted(t, store, 8, "the first offset not handed out")
	})
}

// TestManagerStopsWhenLost: a lost fence stops the manager on its own
// (Done closes; nothing watches the fence, which calls the manager) and
// nothing more is handed out; a manager stopped before a loss takes its
// AfterLost registration back.
func TestManagerStopsWhenLost(t *testing.T) {
	p, _, fence := fakedPartition(t, 10, NewConfig())
	out := make(chan *Message)
	m, err := start(handOffTo(t, out, p))
	if err != nil {
		t.Fatal(err)
	}
	recv(t, out) // the next one waits for a reader
	fence.lose()
	select {
	case <-m.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the manager did not stop after the fence was lost")
	}
	// The batch holder passed offset 6 on before the loss, and may still
	// be offering it; nothing after it passes.
	for {
		select {
		case extra := <-out:
			if extra.Offset != 6 {
				t.Errorf("offset %d handed out after the loss", extra.Offset)
			}
			continue
		default:
		}
		break
	}
	_ = m.Stop(false)

	p, _, fence = fakedPartition(t, 10, NewConfig())
	if m, err = start(handOffTo(t, make(chan *Message), p)); err != nil {
		t.Fatal(err)
	}
	_ = m.Stop(false)
	if n := fence.unwatched.Load(); n != 1 {
		t.Errorf("AfterLost registrations taken back at Stop: %d, want 1", n)
	}
}

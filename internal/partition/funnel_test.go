package partition

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"go.uber.org/goleak"
)

// funnelOf builds feeds of per messages for parts partitions and a funnel
// into an unbuffered channel; the test closes the funnel.
func funnelOf(t *testing.T, parts, per int) ([][]sarama.ConsumerMessage, chan *Message, *Funnel) {
	t.Helper()
	out := make(chan *Message)
	f, err := NewFunnel(out)
	if err != nil {
		t.Fatal(err)
	}
	return feedsOf(parts, per), out, f
}

// startFunneled starts n managers of partitions 0..n-1 of feeds, from
// offset 0, sharing fence and funnel f.
func startFunneled(t *testing.T, f *Funnel, fence Fence, feeds [][]sarama.ConsumerMessage, cfg Config) []*Manager {
	t.Helper()
	var ms []*Manager
	store := &memStore{committed: map[int32]int64{}}
	for p := range feeds {
		store.committed[int32(p)] = 0
	}
	committer := committerFor(t, store, cfg)
	for p := range feeds {
		m, err := Start(Params{Topic: "t", Partition: int32(p), Client: noResolver{}, Consumer: feedConsumer{batches: feeds},
			Store: store, Committer: committer, Fence: fence, Funnel: f, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// TestFunnelDeliversEveryPartitionInOrder: several partitions through one
// funnel into one unbuffered channel: each message once, each partition
// in offset order, and every ack counted by the right manager.
func TestFunnelDeliversEveryPartitionInOrder(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the other cleanups
	const parts, per = 5, 3000
	feeds, out, f := funnelOf(t, parts, per)
	cfg := NewConfig()
	cfg.MaxUnacked = 100 // several batches per partition, with backpressure
	ms := startFunneled(t, f, newFence(), feeds, cfg)
	var next [parts]int64
	for i := 0; i < parts*per; i++ {
		m := recv(t, out)
		if m.Offset != next[m.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", m.Partition, m.Offset, next[m.Partition])
		}
		next[m.Partition]++
		if r := m.Ack(); r != AckOK {
			t.Fatalf("ack %d/%d: %v", m.Partition, m.Offset, r)
		}
	}
	for p, m := range ms {
		if err := m.Stop(true); err != nil {
			t.Errorf("partition %d: Stop: %v", p, err)
		}
		if s := m.Stats(); s.Delivered != per || s.Acks != per || s.Acked != per || s.Unacked != 0 {
			t.Errorf("partition %d: delivered %d, acks %d, acked %d, unacked %d; want %d, %d, %d, 0",
				p, s.Delivered, s.Acks, s.Acked, s.Unacked, per, per, per)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestFunnelStopWithdrawsWhatWasNotHandedOut: nobody reads, so every lane
// is stuck on a job and the other managers' jobs wait in the queue. A
// manager whose job waits stops at once all the same (it withdraws the
// job), then those being served stop too; nothing is handed out, and what
// was tracked is forgotten: nothing is committed past the start and
// nothing is left unacked.
func TestFunnelStopWithdrawsWhatWasNotHandedOut(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the other cleanups
	parts := funnelLanes + 2
	feeds, out, f := funnelOf(t, parts, 50)
	cfg := NewConfig()
	cfg.CommitInterval = time.Hour
	cfg.DrainTimeout = time.Minute // a drain that waited for a withdrawn job would show
	ms := startFunneled(t, f, newFence(), feeds, cfg)
	waitFor(t, "every manager's job with the funnel", func() bool { return len(f.jobs) == parts-funnelLanes })
	// Take the waiting jobs out of the queue, as a funnel that has not got
	// to them yet, to know whose they are; stop those managers first.
	var order []*Manager
	for range parts - funnelLanes {
		order = append(order, (<-f.jobs).m)
	}
	for _, m := range ms {
		if !slices.Contains(order, m) {
			order = append(order, m)
		}
	}
	for i, m := range order {
		stopped := make(chan error, 1)
		go func() { stopped <- m.Stop(true) }()
		select {
		case err := <-stopped:
			if err != nil {
				t.Errorf("partition %d: Stop: %v", m.Partition(), err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("partition %d (stopped %d of %d, %d waiting in the queue): Stop hangs", m.Partition(), i+1, parts, parts-funnelLanes)
		}
		s := m.Stats()
		if s.Delivered != 0 || s.Unacked != 0 || s.Committed != 0 || s.Acked != 0 {
			t.Errorf("partition %d: delivered %d, unacked %d, committed %d, acked %d; want all 0",
				m.Partition(), s.Delivered, s.Unacked, s.Committed, s.Acked)
		}
	}
	select {
	case m := <-out:
		t.Errorf("offset %d of partition %d handed out after its manager stopped", m.Offset, m.Partition)
	default:
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFunnelHoldsBackWhileSuspended: with the session suspended, the
// funnel hands nothing out, for any partition, and resumes with the next
// offset of each.
func TestFunnelHoldsBackWhileSuspended(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the other cleanups
	const parts, per = 3, 20
	feeds, out, f := funnelOf(t, parts, per)
	fence := newFence()
	ms := startFunneled(t, f, fence, feeds, NewConfig())
	var next [parts]int64
	take := func(m *Message) {
		t.Helper()
		if m.Offset != next[m.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", m.Partition, m.Offset, next[m.Partition])
		}
		next[m.Partition]++
		m.Ack()
	}
	take(recv(t, out))
	fence.suspend()
	// Each lane holds a job of its own partition back once it has seen the
	// suspension (a send that raced with its start may complete).
	waitFor(t, "both lanes holding back", func() bool {
		n := 0
		for _, m := range ms {
			if m.Stats().Suspended {
				n++
			}
		}
		return n == funnelLanes
	})
	select {
	case m := <-out:
		t.Fatalf("offset %d of partition %d handed out while suspended", m.Offset, m.Partition)
	case <-time.After(200 * time.Millisecond): // observation window
	}
	fence.resume()
	for i := 1; i < parts*per; i++ {
		take(recv(t, out))
	}
	for _, m := range ms {
		_ = m.Stop(false)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFunnelParams(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the other cleanups
	if _, err := NewFunnel(nil); !errors.Is(err, ErrConfig) {
		t.Errorf("NewFunnel(nil) = %v, want ErrConfig", err)
	}
	out := make(chan *Message)
	f, err := NewFunnel(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	store := &memStore{}
	base := Params{Topic: "t", Client: noResolver{}, Consumer: feedConsumer{}, Store: store,
		Committer: committerFor(t, store, NewConfig()), Fence: newFence(), Config: NewConfig()}
	for _, c := range []struct {
		name  string
		field string
		mod   func(*Params)
	}{
		{"neither", "Out", func(p *Params) {}},
		{"both", "Out", func(p *Params) { p.Out, p.Funnel = out, f }},
		{"close a shared channel", "CloseOut", func(p *Params) { p.Funnel, p.CloseOut = f, true }},
	} {
		p := base
		c.mod(&p)
		m, err := Start(p)
		if m != nil {
			_ = m.Stop(false)
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: Start = %v, want ErrConfig naming %s", c.name, err, c.field)
		}
	}
}

// TestFunnelClosedUnderAManager: a funnel closed while a manager still
// uses it (a misuse) does not hang the manager; it reports it.
func TestFunnelClosedUnderAManager(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the other cleanups
	out := make(chan *Message)
	f, err := NewFunnel(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	reported := make(chan error, 10)
	feeds := [][]sarama.ConsumerMessage{feedMessages("t", 0, 0, 5)}
	store := &memStore{committed: map[int32]int64{0: 0}}
	m, err := Start(Params{Topic: "t", Client: noResolver{}, Consumer: feedConsumer{batches: feeds},
		Store: store, Committer: committerFor(t, store, NewConfig()), Fence: newFence(), Funnel: f, Config: NewConfig(),
		Report: func(err error) { reported <- err }})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reported:
		if !errors.Is(err, ErrFunnelClosed) {
			t.Errorf("reported %v, want ErrFunnelClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("nothing reported")
	}
	if err := m.Stop(true); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if s := m.Stats(); s.Delivered != 0 || s.Unacked != 0 {
		t.Errorf("delivered %d, unacked %d; want 0, 0", s.Delivered, s.Unacked)
	}
}

// waitFor polls cond every millisecond, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testcluster.Await(t, 10*time.Second, time.Millisecond, what, cond)
}

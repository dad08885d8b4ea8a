package partition

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/tracker"
)

// fastAckSetup starts a manager on a faked partition of n records from
// offset 5 on (committed 5), fetched in shares of 20, handing out batches.
func fastAckSetup(t *testing.T, n int) (*Manager, *memStore, chan *Handout) {
	t.Helper()
	f := newFakeFetcher()
	f.produce(0, 0, 5+n, 20)
	store := &memStore{committed: map[int32]int64{0: 5}}
	cfg := NewConfig()
	cfg.DrainTimeout = time.Second
	out := make(chan *Handout)
	m, err := start(Params{Topic: "t", Partition: 0, Client: f, Fetcher: f, Store: store,
		Committer: committerFor(t, store, cfg), Fence: newFence(), Batches: out, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return m, store, out
}

// TestAckInOrderPathAgreesWithTracker: a random mix of acks in order (the
// lock-free path), repeats, acks out of order and batch acks gets, ack by
// ack, the result a tracker given the same deliveries and acks gives, and
// the same acked watermark and ack count; an ack after Stop is stale.
// With every ack in order (seed 0), each one takes the lock-free path.
func TestAckInOrderPathAgreesWithTracker(t *testing.T) {
	leakChecked(t, func(t *testing.T) {
		for seed := range uint64(8) {
			const n = 400
			m, store, out := fastAckSetup(t, n)
			ref := tracker.NewTracker(5)
			rng := rand.New(rand.NewPCG(seed, 1))
			var got []*Message
			acked := map[int64]bool{}
			cursor, oks, fast := 0, uint64(0), 0
			ack := func(i int) {
				msg := got[i]
				want := ref.Ack(msg.Offset)
				r := msg.Ack()
				if (want == tracker.AckOK) != (r == AckOK) || (want == tracker.AckDuplicate) != (r == AckDuplicate) {
					t.Fatalf("seed %d: Ack(%d) = %v, a tracker says %v", seed, msg.Offset, r, want)
				}
				if r == AckOK {
					acked[msg.Offset] = true
					oks++
					if m.ackNext.Load() == msg.Offset+1 {
						fast++ // (or the tracker took it and the path opened after)
					}
				}
			}
			for cursor < n {
				if cursor == len(got) {
					b := receive(t, out, "batch")
					if err := ref.DeliverRun(b.Messages[0].Offset, len(b.Messages), time.Now()); err != nil {
						t.Fatal(err)
					}
					got = append(got, b.Messages...)
					if seed > 0 && rng.IntN(8) == 0 { // a batch ack now and then
						for _, msg := range b.Messages {
							ref.Ack(msg.Offset)
						}
						if r := b.Ack(); r != AckOK {
							t.Fatalf("seed %d: batch ack %v", seed, r)
						}
						for _, msg := range b.Messages {
							if !acked[msg.Offset] {
								acked[msg.Offset] = true
								oks++
							}
						}
					}
				}
				x := rng.IntN(20)
				if seed == 0 {
					x = 0 // every ack in order: all of them take the path
				}
				switch {
				case x < 15: // in order
					ack(cursor)
					cursor++
				case x < 18: // again
					ack(rng.IntN(cursor + 1))
				default: // ahead, out of order
					ack(cursor + rng.IntN(len(got)-cursor))
				}
			}
			if fast == 0 || seed == 0 && fast != n {
				t.Fatalf("seed %d: %d acks of %d took the in-order path", seed, fast, n)
			}
			s := m.Stats()
			if s.Acked != ref.Committable() || s.Acks != oks {
				t.Fatalf("seed %d: acked watermark %d, %d acks; a tracker says %d, %d", seed, s.Acked, s.Acks, ref.Committable(), oks)
			}
			if err := m.Stop(true); err != nil {
				t.Fatal(err)
			}
			if c := store.get(0); c != ref.Committable() {
				t.Fatalf("seed %d: committed %d, want %d", seed, c, ref.Committable())
			}
			if r := got[len(got)-1].Ack(); r != AckStale {
				t.Fatalf("seed %d: ack after Stop: %v, want stale", seed, r)
			}
		}
	})
}

// TestAckInOrderPathConcurrent: two goroutines ack the messages of each
// batch, one the even offsets, one the odd ones, as they come: every ack
// counts once, and everything is committed at Stop.
func TestAckInOrderPathConcurrent(t *testing.T) {
	leakChecked(t, func(t *testing.T) {
		const n = 2000
		m, store, out := fastAckSetup(t, n)
		okAcks := make(chan int, 2)
		var wg sync.WaitGroup
		ins := [2]chan *Handout{make(chan *Handout, n), make(chan *Handout, n)}
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok := 0
				for b := range ins[g] {
					for _, msg := range b.Messages {
						if int(msg.Offset%2) == g && msg.Ack() == AckOK {
							ok++
						}
					}
				}
				okAcks <- ok
			}()
		}
		for seen := 0; seen < n; {
			b := receive(t, out, "batch")
			seen += len(b.Messages)
			ins[0] <- b
			ins[1] <- b
		}
		close(ins[0])
		close(ins[1])
		wg.Wait()
		if total := <-okAcks + <-okAcks; total != n {
			t.Fatalf("%d acks counted, want %d", total, n)
		}
		if s := m.Stats(); s.Acks != n || s.Acked != 5+n {
			t.Fatalf("stats: %d acks, watermark %d; want %d, %d", s.Acks, s.Acked, n, 5+n)
		}
		if err := m.Stop(true); err != nil {
			t.Fatal(err)
		}
		if c := store.get(0); c != 5+n {
			t.Fatalf("committed %d, want %d", c, 5+n)
		}
	})
}

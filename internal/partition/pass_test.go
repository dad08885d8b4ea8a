package partition

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestBatchPass: a batch taken whole is passed on message by message: OK
// while healthy; held while the session is suspended (and PassCancelled if
// ctx ends meanwhile) and OK again once healthy; dropped once the manager
// stops, with the rest abandoned so that the drain does not wait for them
// and the commit stops before them. BeforeDrain runs before the drain.
func TestBatchPass(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cfg := NewConfig()
	cfg.DrainTimeout = 30 * time.Second // a drain that waited would fail the test's deadline
	beforeDrain := make(chan struct{})
	m, store, fence, out := setupBatches(t, 6, cfg, func(p *Params) { p.BeforeDrain = func() { close(beforeDrain) } })
	// Take batches until all 6 messages are out (the mock may yield them in
	// more than one fetch).
	var msgs []*Message
	var batches []*Handout
	for len(msgs) < 6 {
		select {
		case b := <-out:
			batches = append(batches, b)
			msgs = append(msgs, b.Messages...)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of 6 messages", len(msgs))
		}
	}
	last := batches[len(batches)-1]
	ctx := context.Background()
	// Everything but the last batch's messages: passed and acked.
	for _, b := range batches[:len(batches)-1] {
		for i := range b.Messages {
			if r := b.Pass(ctx, i); r != PassOK {
				t.Fatalf("healthy: %v", r)
			}
			b.Messages[i].Ack()
		}
	}
	if last.Len() < 3 {
		t.Fatalf("the mock fetched the last batch with %d message(s); the test needs 3", last.Len())
	}
	if r := last.Pass(ctx, 0); r != PassOK {
		t.Fatalf("healthy: %v", r)
	}
	last.Messages[0].Ack()

	// Suspended: held; ctx ending meanwhile cancels without deciding.
	fence.suspend()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if r := last.Pass(short, 1); r != PassCancelled {
		t.Fatalf("suspended, ctx ended: %v; want cancelled", r)
	}
	cancel()
	passed := passWaits(t, ctx, last, 50*time.Millisecond, "suspended")
	fence.resume()
	if r := <-passed; r != PassOK {
		t.Fatalf("healthy again: %v", r)
	}
	last.Messages[1].Ack()

	// Stopping: what remains of the batch is dropped, and the drain does
	// not wait for it; the commit ends where the user stopped.
	stopped := make(chan error, 1)
	go func() { stopped <- m.Stop(true) }()
	<-beforeDrain
	if r := last.Pass(ctx, 2); r != PassDropped {
		t.Fatalf("stopping: %v; want dropped", r)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop waited for messages that were never passed on")
	}
	want := last.Messages[1].Offset + 1
	if c := store.get(0); c != want {
		t.Errorf("committed %d, want %d (after the last message passed on)", c, want)
	}
}

// TestPassLeaseExpired: after a pause nobody noticed yet the fence's
// channels still say healthy while its lease has ended; Pass asks the
// lease before every message and hands out nothing until the session has
// answered again, and a batch hand-off waits likewise.
func TestPassLeaseExpired(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cfg := NewConfig()
	m, _, fence, out := setupBatches(t, 4, cfg, nil)
	defer m.Stop(false)
	var b *Handout
	select {
	case b = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("no batch")
	}
	ctx := context.Background()
	if r := b.Pass(ctx, 0); r != PassOK {
		t.Fatalf("healthy: %v", r)
	}
	b.Messages[0].Ack()
	if b.Len() < 2 {
		t.Fatalf("the mock fetched a batch of %d message(s); the test needs 2", b.Len())
	}
	fence.expired.Store(true) // the clock says the lease ended; the channels do not know yet
	select {
	case <-fence.Suspended():
		t.Fatal("the test fence shut before Lease was asked")
	default:
	}
	passed := passWaits(t, ctx, b, 100*time.Millisecond, "lease expired")
	if fence.leaseCalls.Load() == 0 {
		t.Fatal("Pass never asked the lease")
	}
	select {
	case <-fence.Suspended():
	default:
		t.Fatal("Lease saying false did not shut the fence")
	}
	fence.expired.Store(false)
	fence.resume() // the session answered again
	if r := <-passed; r != PassOK {
		t.Fatalf("lease back: %v", r)
	}
}

// TestOfferEndsAtLeaseEnd: a batch hand-off waiting for the receiver when
// its lease ends is withdrawn at that end, not when the session's
// suspension is noticed (the gate shuts a goroutine or two later; here,
// never by itself): nothing is handed out after the end, and the batch
// comes whole once the session has answered again.
func TestOfferEndsAtLeaseEnd(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	end := time.Now().Add(300 * time.Millisecond)
	m, _, fence, out := setupBatches(t, 4, NewConfig(), func(p *Params) {
		p.Fence.(*testFence).leaseEnd.Store(&end) // before the first hand-off
	})
	defer m.Stop(false)
	waitFor(t, "the hand-off withdrawn at the lease's end", func() bool { return m.Stats().Suspended })
	if now := time.Now(); now.Before(end) {
		t.Fatalf("withdrawn %v before the lease's end", end.Sub(now))
	}
	select {
	case b := <-out: // Suspended: the hand-off waits for Ready, it sends nothing
		t.Fatalf("offset %d handed out after the lease's end", b.Messages[0].Offset)
	default:
	}
	fence.leaseEnd.Store(nil)
	fence.resume() // the session answered again
	b := receive(t, out, "batch after the lease came back")
	if first := b.Messages[0].Offset; first != 5 {
		t.Errorf("first offset handed out %d, want 5 (nothing skipped)", first)
	}
}

// passWaits calls h.Pass(ctx, 1) in a goroutine and fails the test (state
// says why it must wait) if it returns within wait; the result arrives on
// the channel returned.
func passWaits(t *testing.T, ctx context.Context, h *Handout, wait time.Duration, state string) <-chan PassResult {
	t.Helper()
	passed := make(chan PassResult, 1)
	go func() { passed <- h.Pass(ctx, 1) }()
	select {
	case r := <-passed:
		t.Fatalf("%s: Pass returned %v instead of waiting", state, r)
	case <-time.After(wait):
	}
	return passed
}

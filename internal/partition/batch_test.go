package partition

import (
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestBatchAckAndStop: batches carry tracked messages in offset order;
// AckUpTo then Ack count each message once; the watermark is committed at
// Stop; a batch ack after Stop is stale and counted in Params.StaleAcks;
// CloseBatches closes the batch channel; Done closes.
func TestBatchAckAndStop(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cfg := NewConfig()
	cfg.DrainTimeout = time.Second
	var stale atomic.Uint64
	m, store, _, out := setupBatches(t, 20, cfg, func(p *Params) { p.CloseBatches, p.StaleAcks = true, &stale })
	var got []*Handout
	n := 0
	for n < 20 {
		select {
		case b := <-out:
			if b.Topic != "t" || b.Partition != 0 || b.FirstOffset() != int64(5+n) {
				t.Fatalf("batch %s/%d from %d; want t/0 from %d", b.Topic, b.Partition, b.FirstOffset(), 5+n)
			}
			n += b.Len()
			got = append(got, b)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of 20 messages", n)
		}
	}
	b := got[0]
	if b.Len() > 1 {
		if r := b.AckUpTo(b.FirstOffset()); r != AckOK {
			t.Errorf("AckUpTo(first): %v", r)
		}
	}
	if r := b.AckUpTo(b.FirstOffset() - 1); r != AckUnknown && r != AckDuplicate {
		t.Errorf("AckUpTo below the batch: %v", r)
	}
	for _, b := range got {
		if r := b.Ack(); r != AckOK {
			t.Errorf("Ack: %v", r)
		}
	}
	if r := got[0].Ack(); r != AckDuplicate {
		t.Errorf("second Ack: %v; want duplicate", r)
	}
	awaitDelivered(m, 20)
	if s := m.Stats(); s.Acks != 20 || s.Delivered != 20 {
		t.Errorf("stats: %d acks, %d delivered; want 20, 20", s.Acks, s.Delivered)
	}
	if err := m.Stop(true); err != nil {
		t.Fatal(err)
	}
	if c := store.get(0); c != 25 {
		t.Errorf("committed %d; want 25", c)
	}
	if r := got[0].Ack(); r != AckStale || stale.Load() != 1 {
		t.Errorf("ack after Stop: %v, %d counted; want stale, 1", r, stale.Load())
	}
	if _, ok := <-out; ok {
		t.Error("batch channel not closed after Stop")
	}
	<-m.Done()
}

// TestHandoutLinks: a Handout's public batch holds the slab's messages
// (pointers into the slab, in order), each of them belongs to that batch
// (its Generation is the Manager's), and the batch and its messages are
// the Manager's partition's.
func TestHandoutLinks(t *testing.T) {
	m := &Manager{topic: "t", partition: 3, gen: 7}
	slab := []Message{{Topic: "t", Partition: 3, Offset: 10}, {Topic: "t", Partition: 3, Offset: 12}}
	h := m.newHandout(slab)
	if h.Owner() != m || h.Topic != "t" || h.Partition != 3 || h.Len() != 2 || h.Generation() != 7 {
		t.Fatalf("handout %s/%d, %d messages, generation %d, owner %p; want t/3, 2, 7, %p",
			h.Topic, h.Partition, h.Len(), h.Generation(), h.Owner(), m)
	}
	for i := range slab {
		if h.Messages[i] != &slab[i] {
			t.Errorf("Messages[%d] is not the slab's message %d", i, i)
		}
		if g := slab[i].Generation(); g != 7 {
			t.Errorf("message %d: generation %d, want 7", i, g)
		}
	}
	var alone Message
	if r := alone.Ack(); r != AckInvalid || alone.Generation() != 0 {
		t.Errorf("a message of no batch: Ack %v, generation %d; want invalid, 0", r, alone.Generation())
	}
}

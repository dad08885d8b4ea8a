package tracker

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDeliverAckInOrder measures one Deliver plus one Ack per op with
// acks in delivery order (the common case). Steady state: 0 allocs/op.
func BenchmarkDeliverAckInOrder(b *testing.B) {
	tr := NewTracker(0)
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		if err := tr.Deliver(off, t0); err != nil {
			b.Fatal(err)
		}
		if r := tr.Ack(off); r != AckOK {
			b.Fatalf("Ack(%d) = %v", off, r)
		}
		off++
	}
}

// BenchmarkDeliverAckRandomWindow1000 measures one Deliver plus one Ack per op
// with acks in random order inside windows of 1000 offsets: offsets are
// grouped in blocks of 1000, and block k is acked in a shuffled order while
// block k+1 is being delivered, so up to 2000 entries are outstanding.
// Steady state: 0 allocs/op.
func BenchmarkDeliverAckRandomWindow1000(b *testing.B) {
	const window = 1000
	rng := rand.New(rand.NewPCG(1, 2))
	var perms [16][window]int64
	for p := range perms {
		for i := range perms[p] {
			perms[p][i] = int64(i)
		}
		rng.Shuffle(window, func(i, j int) { perms[p][i], perms[p][j] = perms[p][j], perms[p][i] })
	}
	tr := NewTracker(0)
	var next int64
	for ; next < window; next++ { // block 0 delivered up front
		if err := tr.Deliver(next, t0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		if err := tr.Deliver(next, t0); err != nil {
			b.Fatal(err)
		}
		next++
		block := i / window
		off := block*window + perms[block%int64(len(perms))][i%window]
		if r := tr.Ack(off); r != AckOK {
			b.Fatalf("Ack(%d) = %v", off, r)
		}
		i++
	}
	b.ReportMetric(float64(tr.Outstanding()), "outstanding")
}

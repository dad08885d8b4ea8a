package testcluster_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// fakeTB records what a check reports, so that a test can check a check.
type fakeTB struct {
	testing.TB
	errors []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, strings.TrimSpace(strings.ReplaceAll(format, "%", "")))
}

// TestLedger: the ledger counts deliveries by value and by consumer, and
// its checks name a missing, a duplicated and a skipped message.
func TestLedger(t *testing.T) {
	l := testcluster.NewLedger()
	v := func(i int) string { return testcluster.Value("t", i) }
	l.Add("a", 0, 0, v(0))
	l.Add("a", 1, 0, v(1))
	l.Add("b", 1, 0, v(1)) // a duplicate
	l.Add("b", 0, 2, v(3)) // offset 1 of partition 0 (message 2) never delivered
	if got := l.Count("t", 4); got != 3 {
		t.Errorf("Count = %d, want 3", got)
	}
	if got, by := l.Total(), l.By("b"); got != 4 || by != 2 {
		t.Errorf("Total, By(b) = %d, %d; want 4, 2", got, by)
	}
	if got := l.Offsets("b", 0); !slices.Equal(got, []int64{2}) {
		t.Errorf("Offsets(b, 0) = %v, want [2]", got)
	}
	missing, dups := l.MissingAndDups("t", 4)
	if !slices.Equal(missing, []string{v(2)}) || len(dups) != 1 || len(dups[v(1)]) != 2 {
		t.Errorf("MissingAndDups = %v, %v; want [%s] and %s twice", missing, dups, v(2), v(1))
	}
	want := []testcluster.Delivery{{Who: "a", Partition: 1, Offset: 0}, {Who: "b", Partition: 1, Offset: 0}}
	if got := l.Deliveries(v(1)); !slices.Equal(got, want) {
		t.Errorf("Deliveries = %v, want %v", got, want)
	}

	var f fakeTB
	l.CheckExactlyOnce(&f, "t", 2)
	if len(f.errors) != 1 {
		t.Errorf("CheckExactlyOnce of a duplicate reported %v, want one error", f.errors)
	}
	f.errors = nil
	l.CheckContiguous(&f, map[int32]int64{0: 3, 1: 1})
	if len(f.errors) != 1 {
		t.Errorf("CheckContiguous of a gap reported %v, want one error", f.errors)
	}
	f.errors = nil
	l.CheckExactlyOnce(&f, "t", 1)
	l.CheckContiguous(&f, map[int32]int64{0: 1, 1: 1})
	if len(f.errors) != 0 {
		t.Errorf("checks of what was delivered once reported %v", f.errors)
	}
}

// TestProducer: a background producer writes batches in index order,
// each to partition index mod parts, until halted; Written says where
// each landed, and the log ends match.
func TestProducer(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "t")
	const parts = 3
	if err := c.CreateTopic(t.Context(), topic, parts, 1); err != nil {
		t.Fatal(err)
	}
	p := testcluster.StartProducer(t, c, topic, parts, 10, 6, 20*time.Millisecond)
	testcluster.Await(t, 60*time.Second, 10*time.Millisecond, "three batches", func() bool { return p.Next() >= 10+3*6 })
	n := p.Halt(t)
	if n2 := p.Halt(t); n2 != n {
		t.Errorf("Halt again = %d, want %d", n2, n)
	}
	w := p.Written()
	if len(w) != n-10 || (n-10)%6 != 0 {
		t.Fatalf("%d written up to index %d from 10, in batches of 6", len(w), n)
	}
	perPartition := map[int32]int64{}
	for i, x := range w {
		if x.Index != 10+i || x.Partition != int32(x.Index%parts) {
			t.Errorf("written[%d] = %+v", i, x)
		}
		perPartition[x.Partition]++
	}
	hwm := testcluster.MustHighWaterMarks(t, c, topic)
	if !maps.Equal(hwm, perPartition) {
		t.Errorf("log ends %v, want %v", hwm, perPartition)
	}
}

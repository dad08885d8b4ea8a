package shrink

import (
	"maps"
	"reflect"
	"runtime"
	"slices"
	"testing"
)

// TestMapCopiesBelowAQuarter: a map is kept while it holds a quarter of
// its peak or more, or never held minPeak entries; below a quarter it is
// copied with every entry, and the copy's size is the new peak.
func TestMapCopiesBelowAQuarter(t *testing.T) {
	m := map[int]int{}
	var p Peak
	for i := range 1000 {
		m[i] = i * 2
		p.Note(len(m))
	}
	for i := range 750 {
		delete(m, i)
		if got := Map(m, &p); !sameMap(got, m) {
			t.Fatalf("copied at %d entries of a peak of 1000", len(m))
		}
	}
	want := maps.Clone(m)
	delete(m, 750)
	delete(want, 750)
	got := Map(m, &p)
	if sameMap(got, m) {
		t.Fatal("not copied at 249 entries of a peak of 1000")
	}
	if !maps.Equal(got, want) {
		t.Fatal("the copy lost or changed entries")
	}
	if p.n != 249 {
		t.Fatalf("peak %d after the copy, want 249", p.n)
	}

	small := map[int]int{}
	var sp Peak
	for i := range minPeak - 1 {
		small[i] = i
		sp.Note(len(small))
	}
	clear(small)
	if got := Map(small, &sp); !sameMap(got, small) {
		t.Fatal("a map that never held minPeak entries was copied")
	}
}

// TestMapGivesBackMemory: the copy of a map emptied to a few entries
// frees the room of its peak.
func TestMapGivesBackMemory(t *testing.T) {
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	m := map[[4]int64]int{}
	var p Peak
	before := heap()
	for i := range 100_000 {
		m[[4]int64{int64(i)}] = i
		p.Note(len(m))
	}
	for i := range 99_990 {
		delete(m, [4]int64{int64(i)})
		m = Map(m, &p)
	}
	after := heap()
	if grew := int64(after) - int64(before); grew > 1<<20 {
		t.Errorf("a map of 10 entries after a peak of 100,000 holds %d bytes", grew)
	}
	runtime.KeepAlive(m)
}

// sameMap reports whether a and b are one map.
func sameMap[M ~map[K]V, K comparable, V any](a, b M) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestSliceCopiesBelowAQuarter(t *testing.T) {
	big := make([]int, 0, 1000)
	for i := range 250 {
		big = append(big, i)
	}
	if got := Slice(big); &got[0] != &big[0] {
		t.Fatal("copied at 250 of a capacity of 1000")
	}
	short := big[:249]
	got := Slice(short)
	if &got[0] == &short[0] {
		t.Fatal("not copied at 249 of a capacity of 1000")
	}
	if !slices.Equal(got, short) || cap(got) != 2*249 {
		t.Fatalf("copy %d entries, cap %d: want the 249 entries, cap 498", len(got), cap(got))
	}
	if got := Slice(big[:0]); cap(got) != 0 {
		t.Fatalf("an emptied slice keeps a capacity of %d", cap(got))
	}
	small := make([]int, 1, minPeak-1)
	if got := Slice(small); cap(got) != minPeak-1 {
		t.Fatal("a slice under minPeak was copied")
	}
}

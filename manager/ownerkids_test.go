package manager

import (
	"maps"
	"runtime"
	"strconv"
	"testing"
)

// TestOwnerKids: partition nodes below the count take slots, any other
// child (beyond the count, a name Kafka would not write, a stray node)
// is kept by name; get, del, len and partitions agree with a map of the
// same children.
func TestOwnerKids(t *testing.T) {
	k := newOwnerKids(70)
	want := map[string]string{}
	set := func(name, owner string) { k.set(name, owner); want[name] = owner }
	del := func(name string) { k.del(name); delete(want, name) }
	for _, p := range []int{0, 1, 63, 64, 69} {
		set(strconv.Itoa(p), "m"+strconv.Itoa(p%3))
	}
	set("70", "far")    // beyond the count
	set("007", "stray") // not Kafka's name of 7
	set("+5", "stray")
	set("lock", "")
	set("1", "moved") // a slot set again
	del("63")
	del("63") // twice
	del("lock")
	del("8") // never there

	if k.len() != len(want) {
		t.Errorf("len %d, want %d", k.len(), len(want))
	}
	for _, name := range []string{"0", "1", "7", "8", "63", "64", "69", "70", "007", "+5", "lock", "71"} {
		o, ok := k.get(name)
		if wo, wok := want[name]; o != wo || ok != wok {
			t.Errorf("get(%q) = %q, %v; want %q, %v", name, o, ok, wo, wok)
		}
	}
	got := maps.Collect(k.partitions())
	wantParts := map[int32]string{0: "m0", 1: "moved", 64: "m1", 69: "m0", 70: "far"}
	if !maps.Equal(got, wantParts) {
		t.Errorf("partitions %v, want %v", got, wantParts)
	}
	for p, o := range wantParts {
		if g, ok := k.partition(p); !ok || g != o {
			t.Errorf("partition(%d) = %q, %v; want %q", p, g, ok, o)
		}
	}
	if _, ok := k.partition(7); ok {
		t.Error("partition 7 found: 007 is not its node")
	}
	var zero ownerKids
	if _, ok := zero.get("0"); ok || zero.len() != 0 {
		t.Error("the zero ownerKids is not empty")
	}
}

func TestPartitionName(t *testing.T) {
	for name, want := range map[string]int32{"0": 0, "7": 7, "2147483647": 1<<31 - 1} {
		if p, ok := partitionName(name); !ok || p != want {
			t.Errorf("partitionName(%q) = %d, %v; want %d", name, p, ok, want)
		}
	}
	for _, name := range []string{"", "00", "07", "-1", "+1", "1a", "2147483648", "99999999999", "lock"} {
		if p, ok := partitionName(name); ok {
			t.Errorf("partitionName(%q) = %d: want no partition", name, p)
		}
	}
}

// TestOwnerKidsMemory: the owners of a topic of 10,000 partitions held by
// a member take under 20 bytes a partition (a map of name to owner took
// about 80).
func TestOwnerKidsMemory(t *testing.T) {
	const n = 10_000
	names := make([]string, n)
	for p := range n {
		names[p] = strconv.Itoa(p)
	}
	owners := []string{"member-a", "member-b", "member-c"}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	k := newOwnerKids(n)
	for p, name := range names {
		k.set(name, owners[p%len(owners)])
	}
	runtime.ReadMemStats(&after)
	if per := float64(after.TotalAlloc-before.TotalAlloc) / n; per > 20 {
		t.Errorf("%.1f bytes allocated a partition, want at most 20", per)
	}
	runtime.KeepAlive(k)
}

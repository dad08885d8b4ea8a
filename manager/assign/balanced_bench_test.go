package assign

import (
	"fmt"
	"testing"
)

// balancedBenchCase builds p partitions over 10 topics led by 12 brokers and
// n members, with every partition owned as Balanced left it for n-1 members
// (so each run is the rebalance after one join).
func balancedBenchCase(p, n int) ([]Member, []Partition) {
	members := make([]Member, n)
	for i := range members {
		members[i].ID = fmt.Sprintf("consumer-%02d", i)
	}
	ps := make([]Partition, 0, p)
	for i := range p {
		t := i % 10
		ps = append(ps, Partition{Topic: fmt.Sprintf("topic-%d", t), ID: int32(i / 10), Leader: int32(i % 12)})
	}
	return members, withOwners(ps, Balanced().Assign(members[:n-1], ps))
}

// BenchmarkBalanced: the rebalance every member runs after a join, at
// 1,000 and 10,000 partitions over 20 members, and from nothing owned.
func BenchmarkBalanced(b *testing.B) {
	for _, size := range []struct{ p, n int }{{1000, 20}, {10000, 20}, {10000, 50}} {
		members, ps := balancedBenchCase(size.p, size.n)
		unowned := withOwners(ps, nil)
		for _, c := range []struct {
			name string
			ps   []Partition
		}{{"join", ps}, {"unowned", unowned}} {
			b.Run(fmt.Sprintf("%s/%dx%d", c.name, size.p, size.n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if a := Balanced().Assign(members, c.ps); len(a) != len(members) {
						b.Fatal("bad assignment")
					}
				}
			})
		}
	}
}

package assign

import (
	"fmt"
	"testing"
)

func benchCase() ([]Member, []Partition) {
	members := make([]Member, 50)
	for i := range members {
		members[i].ID = fmt.Sprintf("consumer-%02d", i)
	}
	var ps []Partition
	for t := range 10 {
		for id := range 200 {
			ps = append(ps, Partition{Topic: fmt.Sprintf("topic-%d", t), ID: int32(id), Leader: int32((t*200 + id) % 12)})
		}
	}
	return members, ps
}

// BenchmarkStrategies: 50 members x 2000 partitions (10 topics, 12 brokers).
func BenchmarkStrategies(b *testing.B) {
	members, ps := benchCase()
	for _, s := range strategies {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if a := s.fn.Assign(members, ps); len(a) != len(members) {
					b.Fatal("bad assignment")
				}
			}
		})
	}
}

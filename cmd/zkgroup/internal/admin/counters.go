package admin

import "github.com/zkgroup/zkgroup/manager"

// Indexes of the per-partition counters in partitionTotal.
const (
	commitErrors = iota
	fetchErrors
	offsetResets
	numCounters
)

// partitionTotal is one partition's counters summed over its ownerships
// by this member.
type partitionTotal struct {
	gen   uint64
	last  [numCounters]uint64 // the values of the current ownership at the last scrape
	total [numCounters]uint64
}

// partitionTotals turns manager.PartitionStats' counters, which start from zero
// with each ownership, into counters that never go down: at each scrape
// it adds what each counter grew since the last one (all of it on a new
// ownership). What an ownership counted after the last scrape before it
// ended is not seen. Not safe for concurrent use: the collector holds its
// lock.
type partitionTotals map[TopicPartition]*partitionTotal

// observe adds p's growth and returns p's totals.
func (pt partitionTotals) observe(p manager.PartitionStats) [numCounters]uint64 {
	tp := TopicPartition{p.Topic, p.Partition}
	cur := [numCounters]uint64{p.CommitErrors, p.FetchErrors, p.Resets}
	t := pt[tp]
	if t == nil {
		t = &partitionTotal{gen: p.Generation}
		pt[tp] = t
	}
	newOwnership := t.gen != p.Generation
	for i := range cur {
		if cur[i] < t.last[i] {
			newOwnership = true
		}
	}
	for i := range cur {
		if newOwnership {
			t.total[i] += cur[i]
		} else {
			t.total[i] += cur[i] - t.last[i]
		}
	}
	t.gen, t.last = p.Generation, cur
	return t.total
}

package manager

import (
	"testing"

	"github.com/zkgroup/zkgroup/internal/partition"
)

// TestFinalCommittersAreRunningPartitions: Close's hold of the final
// commits waits for the partitions whose manager runs, not for a slot
// still claiming or reading its committed offset (no manager yet), nor
// for one already stopping.
func TestFinalCommittersAreRunningPartitions(t *testing.T) {
	c := &Consumer{slotTable: newSlotTable()}
	add := func(p int32, state slotState, running bool) {
		sl := &slot{tp: TopicPartition{Topic: "t", Partition: p}, state: state}
		if running {
			sl.pm.Store(&partition.Manager{})
		}
		c.slots[sl.tp] = sl
	}
	add(0, running, true)
	add(1, claiming, false) // a claim or a committed-offset read under way
	add(2, stopping, true)  // revoked by a rebalance before Close
	add(3, running, true)
	c.mu.Lock()
	got := c.finalCommittersLocked()
	c.mu.Unlock()
	if len(got) != 2 || !containsTP(got, 0) || !containsTP(got, 3) {
		t.Errorf("final committers %v; want partitions 0 and 3", got)
	}
}

func containsTP(tps []TopicPartition, p int32) bool {
	for _, tp := range tps {
		if tp.Partition == p {
			return true
		}
	}
	return false
}

package manager

import (
	"testing"
	"time"
)

// TestStatsLastRebalance: LastRebalance is History's newest entry, and
// nothing before the first rebalance that moved something.
func TestStatsLastRebalance(t *testing.T) {
	if r, ok := (Stats{}).LastRebalance(); ok || r.Seq != 0 {
		t.Errorf("no history: %+v, %v; want none", r, ok)
	}
	at := time.Unix(100, 0)
	s := Stats{History: []Rebalance{{Seq: 1, Took: time.Second}, {Seq: 2, Applied: at, Took: 2 * time.Second}}}
	if r, ok := s.LastRebalance(); !ok || r.Seq != 2 || !r.Applied.Equal(at) || r.Took != 2*time.Second {
		t.Errorf("two rebalances: %+v, %v; want Seq 2", r, ok)
	}
}

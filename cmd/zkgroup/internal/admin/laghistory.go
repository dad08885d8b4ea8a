package admin

import (
	"sync"
	"time"

	"github.com/zkgroup/zkgroup/manager"
)

// LagPoint is this member's total lag at one moment, for the page's chart.
type LagPoint struct {
	// At is the time in Unix milliseconds.
	At int64 `json:"t"`
	// Lag sums the known lag of the partitions this member owned then.
	Lag int64 `json:"lag"`
	// Partitions counts the partitions owned then.
	Partitions int `json:"partitions"`
}

// lagHistory keeps the last points in a ring. Safe for concurrent use.
type lagHistory struct {
	mu     sync.Mutex
	points []LagPoint
	next   int
	full   bool
}

func newLagHistory(n int) *lagHistory { return &lagHistory{points: make([]LagPoint, max(n, 1))} }

// add records st's lag at at.
func (h *lagHistory) add(at time.Time, st manager.Stats) {
	p := LagPoint{At: at.UnixMilli(), Partitions: len(st.Partitions)}
	for _, ps := range st.Partitions {
		if ps.Lag > 0 {
			p.Lag += ps.Lag
		}
	}
	h.mu.Lock()
	h.points[h.next] = p
	h.next = (h.next + 1) % len(h.points)
	h.full = h.full || h.next == 0
	h.mu.Unlock()
}

// list returns the points, oldest first.
func (h *lagHistory) list() []LagPoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return append([]LagPoint{}, h.points[:h.next]...)
	}
	return append(append([]LagPoint{}, h.points[h.next:]...), h.points[:h.next]...)
}

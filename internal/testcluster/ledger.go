package testcluster

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Delivery is one hand-out of a message to a consumer (Who).
type Delivery struct {
	Who       string
	Partition int32
	Offset    int64
}

// Ledger records every delivery of the messages Produce writes, by value,
// with who got it and where it stood, so that a test can check that each
// message was delivered exactly once and say where a duplicate or a gap
// is. Safe for concurrent use; the zero value is not: use NewLedger.
type Ledger struct {
	mu      sync.Mutex
	byValue map[string][]Delivery
	byWho   map[string]int
	total   int
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{byValue: map[string][]Delivery{}, byWho: map[string]int{}}
}

// Add records a delivery of value to who from partition's offset (-1 for
// either when the consumer does not say).
func (l *Ledger) Add(who string, partition int32, offset int64, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byValue[value] = append(l.byValue[value], Delivery{who, partition, offset})
	l.byWho[who]++
	l.total++
}

// Deliveries returns the deliveries of value, in the order recorded.
func (l *Ledger) Deliveries(value string) []Delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.byValue[value])
}

// Offsets returns the offsets of partition that who received, sorted.
func (l *Ledger) Offsets(who string, partition int32) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int64
	for _, ds := range l.byValue {
		for _, d := range ds {
			if d.Who == who && d.Partition == partition {
				out = append(out, d.Offset)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Count is how many of messages [0, n) of topic were delivered at least
// once.
func (l *Ledger) Count(topic string, n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := 0
	for i := 0; i < n; i++ {
		if len(l.byValue[Value(topic, i)]) > 0 {
			k++
		}
	}
	return k
}

// Total is the number of deliveries recorded.
func (l *Ledger) Total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// By is the number of deliveries to who.
func (l *Ledger) By(who string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byWho[who]
}

// MissingAndDups lists the values of messages [0, n) of topic never
// delivered, and the deliveries of those delivered more than once.
func (l *Ledger) MissingAndDups(topic string, n int) (missing []string, dups map[string][]Delivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dups = map[string][]Delivery{}
	for i := 0; i < n; i++ {
		v := Value(topic, i)
		switch ds := l.byValue[v]; {
		case len(ds) == 0:
			missing = append(missing, v)
		case len(ds) > 1:
			dups[v] = slices.Clone(ds)
		}
	}
	return missing, dups
}

// CheckExactlyOnce fails tb unless each of messages [0, n) of topic was
// delivered exactly once; it names the first few missing and duplicated
// (with their deliveries).
func (l *Ledger) CheckExactlyOnce(tb testing.TB, topic string, n int) {
	tb.Helper()
	missing, dups := l.MissingAndDups(topic, n)
	if len(missing) == 0 && len(dups) == 0 {
		return
	}
	var d []string
	for v, ds := range dups {
		d = append(d, fmt.Sprintf("%s x%d %v", v, len(ds), ds))
	}
	tb.Errorf("of %d messages: %d missing (%s), %d duplicated (%s)", n, len(missing), Head(missing, 5), len(dups), Head(d, 5))
}

// CheckContiguous fails tb unless, per partition, the offsets delivered
// (to anyone) cover [0, hwm[partition]) with none skipped.
func (l *Ledger) CheckContiguous(tb testing.TB, hwm map[int32]int64) {
	tb.Helper()
	l.mu.Lock()
	seen := map[int32]map[int64]bool{}
	for _, ds := range l.byValue {
		for _, d := range ds {
			if seen[d.Partition] == nil {
				seen[d.Partition] = map[int64]bool{}
			}
			seen[d.Partition][d.Offset] = true
		}
	}
	l.mu.Unlock()
	for p, end := range hwm {
		var gaps []int64
		for off := int64(0); off < end; off++ {
			if !seen[p][off] {
				gaps = append(gaps, off)
			}
		}
		if len(gaps) > 0 {
			tb.Errorf("partition %d: %d offsets below log-end %d never delivered, e.g. %v", p, len(gaps), end, gaps[:min(5, len(gaps))])
		}
	}
}

// Head joins the first n of s, sorted, for a failure message.
func Head(s []string, n int) string {
	s = slices.Clone(s)
	sort.Strings(s)
	if len(s) > n {
		s = s[:n]
	}
	return strings.Join(s, ", ")
}

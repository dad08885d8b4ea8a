// Package shrink gives back the memory of maps and reused slices that
// were large for a while. A Go map keeps room for the most entries it
// ever held, and a slice reused from round to round (s[:0]) the capacity
// of its largest round, so a member that owned every partition of the
// group for a moment (the first to join) would keep the room of all of
// them, in each map and slice by partition, for its life. Not API.
package shrink

// minPeak is the peak below which a map is never copied: its room costs
// less than the copy.
const minPeak = 64

// Peak is the most entries a map held since it was made. Its zero value
// is a map that held none. Not safe for concurrent use: keep it beside
// the map, under the map's lock.
type Peak struct{ n int }

// Note records that the map holds n entries now (call it after adding).
func (p *Peak) Note(n int) { p.n = max(p.n, n) }

// Map returns m, or, once deletes have left it holding under a quarter
// of its peak (call it after deleting), a copy of m with room for its
// entries alone, whose size is then the peak.
func Map[M ~map[K]V, K comparable, V any](m M, p *Peak) M {
	n := len(m)
	if p.n < minPeak || n >= p.n/4 {
		return m
	}
	out := make(M, n)
	for k, v := range m {
		out[k] = v
	}
	p.n = n
	return out
}

// Slice returns s, or, when its capacity is at least minPeak and over
// four times its length (call it once a round filled it), a copy of s
// with room for twice its length: a slice reused from round to round
// does not keep the capacity of its largest round.
func Slice[S ~[]E, E any](s S) S {
	if cap(s) < minPeak || len(s) >= cap(s)/4 {
		return s
	}
	return append(make(S, 0, 2*len(s)), s...)
}

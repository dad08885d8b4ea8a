package benchkit

import "testing"

// Rounds runs pass for every side in each of rounds rounds, n times over
// (a benchmark's b.N), the order rotated by one side each round so that no
// side always runs first (on a warmer or a busier machine); round counts
// from 1. It hands each result to got, and stops tb at the first error.
func Rounds[S, R any](tb testing.TB, n, rounds int, sides []S, name func(S) string, pass func(S, int) (R, error), got func(S, int, R)) {
	tb.Helper()
	for i := 0; i < n; i++ {
		for r := 0; r < rounds; r++ {
			for j := range sides {
				sd := sides[(j+r)%len(sides)]
				res, err := pass(sd, r+1)
				if err != nil {
					tb.Fatalf("round %d, %s: %v", r+1, name(sd), err)
				}
				got(sd, r+1, res)
			}
		}
	}
}

// MedianRatio returns the median of get over rs, and the median of each
// round's ratio to base's (rs[i] to base[i], for the rounds base has).
func MedianRatio[R any](rs, base []R, get func(R) float64) (median, ratio float64) {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = get(r)
	}
	return Median(v), Median(Ratios(rs, base, get))
}

// Ratios returns each round's ratio of get to base's (rs[i] to base[i],
// for the rounds base has).
func Ratios[R any](rs, base []R, get func(R) float64) []float64 {
	var ratios []float64
	for i := range min(len(rs), len(base)) {
		ratios = append(ratios, get(rs[i])/get(base[i]))
	}
	return ratios
}

package benchkit

import (
	"fmt"
	"slices"
	"testing"
)

// TestRounds: each round runs every side once, the first side rotating.
func TestRounds(t *testing.T) {
	var order []string
	Rounds(t, 1, 3, []string{"a", "b", "c"}, func(s string) string { return s },
		func(s string, round int) (string, error) { return fmt.Sprint(s, round), nil },
		func(_ string, _ int, r string) { order = append(order, r) })
	want := []string{"a1", "b1", "c1", "b2", "c2", "a2", "c3", "a3", "b3"}
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

// TestMedianRatio: the median of the values, and of each round's ratio to
// the base's same round (rounds the base lacks have no ratio).
func TestMedianRatio(t *testing.T) {
	med, ratio := MedianRatio([]float64{2, 9, 4, 100}, []float64{1, 3, 4}, func(v float64) float64 { return v })
	if med != 6.5 || ratio != 2 {
		t.Errorf("MedianRatio = %v, %v; want 6.5, 2", med, ratio)
	}
}

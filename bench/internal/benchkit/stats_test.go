package benchkit

import (
	"slices"
	"testing"
)

// TestLargest: the n largest counts, largest first and equal ones by key,
// and how many were left out.
func TestLargest(t *testing.T) {
	m := map[string]int{"a": 1, "b": 5, "c": 5, "d": 2}
	top, more := Largest(m, 3)
	if want := []Count{{"b", 5}, {"c", 5}, {"d", 2}}; !slices.Equal(top, want) || more != 1 {
		t.Errorf("Largest(m, 3) = %v, %d; want %v, 1", top, more, want)
	}
	if top, more := Largest(m, 4); len(top) != 4 || more != 0 {
		t.Errorf("Largest(m, 4) = %v, %d; want all 4, 0", top, more)
	}
}

// TestStatusFields: RSS and the thread count come from /proc/self/status.
func TestStatusFields(t *testing.T) {
	if rss := RSS(); rss < 1<<20 {
		t.Errorf("RSS %d bytes", rss)
	}
	if n := threads(); n < 1 {
		t.Errorf("%d threads", n)
	}
	if v := statusField("NoSuchField"); v != "" {
		t.Errorf("NoSuchField = %q", v)
	}
}

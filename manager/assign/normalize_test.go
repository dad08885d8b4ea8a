package assign

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestNormalizeOwners(t *testing.T) {
	members := []Member{{ID: "a", Topics: []string{"x"}}, {ID: "b"}}
	ps := []Partition{
		{Topic: "x", ID: 0, Leader: 1, Owner: "a"},     // valid
		{Topic: "y", ID: 0, Leader: 1, Owner: "a"},     // a not subscribed to y
		{Topic: "x", ID: 1, Leader: 1, Owner: "gone"},  // not a member
		{Topic: "x", ID: 2, Leader: -1, Owner: "b"},    // duplicates: smallest
		{Topic: "x", ID: 2, Leader: 4, Owner: "a"},     // valid owner wins,
		{Topic: "x", ID: 2, Leader: 2, Owner: "gone"},  // highest leader wins
		{Topic: "y", ID: 1, Leader: -7, Owner: ""},     // unowned
		{Topic: "y", ID: 1, Leader: -1, Owner: "zzzz"}, // invalid duplicate
	}
	for _, order := range [][]Partition{ps, reversed(ps)} {
		v := normalize(members, order)
		wantParts := []Partition{
			{Topic: "x", ID: 0, Leader: 1}, {Topic: "x", ID: 1, Leader: 1},
			{Topic: "x", ID: 2, Leader: 4}, {Topic: "y", ID: 0, Leader: 1},
			{Topic: "y", ID: 1, Leader: -1},
		}
		if !slices.Equal(v.parts, wantParts) {
			t.Errorf("parts = %v, want %v", v.parts, wantParts)
		}
		if want := []string{"a", "", "a", "", ""}; !slices.Equal(v.owners, want) {
			t.Errorf("owners = %q, want %q", v.owners, want)
		}
		cs := v.classes()
		if len(cs) != 2 || !slices.Equal(cs[1].owners, []string{"a", "", "a"}) ||
			!slices.Equal(cs[0].owners, []string{"", ""}) {
			t.Errorf("class owners not aligned: %+v", cs)
		}
	}
}

func reversed[T any](s []T) []T {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func TestNormalizeOrder(t *testing.T) {
	ps := []Partition{
		{Topic: "b", ID: -3}, {Topic: "a", ID: 2147483647}, {Topic: "a", ID: -2147483648},
		{Topic: "b", ID: 5}, {Topic: "a", ID: 0}, {Topic: "b", ID: -3, Leader: 2},
	}
	v := normalize(nil, ps)
	want := []Partition{
		{Topic: "a", ID: -2147483648}, {Topic: "a", ID: 0}, {Topic: "a", ID: 2147483647},
		{Topic: "b", ID: -3, Leader: 2}, {Topic: "b", ID: 5},
	}
	if !slices.Equal(v.parts, want) {
		t.Errorf("parts = %v, want %v", v.parts, want)
	}
}

// TestClassesUniform: with uniform subscriptions classes is the view
// itself as one class, as grouping the topics by member set makes it;
// without, it is that grouping.
func TestClassesUniform(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 300 {
		members, ps := randomCase(rng, 8, 120, iter%2 == 0)
		v := normalize(members, ps)
		got, want := v.classes(), v.classesBySet()
		if len(got) == 0 && len(want) == 0 {
			continue // none either way
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("iter %d (uniform %v): classes %+v, grouped by member set %+v", iter, v.uniform, got, want)
		}
	}
}

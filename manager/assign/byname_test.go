package assign

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestByName(t *testing.T) {
	for _, s := range strategies {
		fn, err := ByName(s.name)
		if err != nil {
			t.Fatalf("ByName(%q): %v", s.name, err)
		}
		members, ps := []Member{{ID: "a"}, {ID: "b"}}, parts("t", 1, 2, 1, 2, -1)
		if !reflect.DeepEqual(fn.Assign(members, ps), s.fn.Assign(members, ps)) {
			t.Errorf("ByName(%q) returned a different strategy", s.name)
		}
	}
	if got := Names(); !reflect.DeepEqual(got, []string{"balanced", "range", "roundrobin", "leader-aware", "sticky"}) {
		t.Errorf("Names() = %v", got)
	}
	Names()[0] = "mutated"
	if Names()[0] != "balanced" {
		t.Error("Names() shares its backing array")
	}
	if _, err := ByName(DefaultName); err != nil || DefaultName != "balanced" {
		t.Errorf("DefaultName %q: %v", DefaultName, err)
	}
	for _, bad := range []string{"", "Range", "round-robin", "leader_aware"} {
		fn, err := ByName(bad)
		if fn != nil || !errors.Is(err, ErrConfig) {
			t.Fatalf("ByName(%q) = %v, %v; want nil, ErrConfig", bad, fn, err)
		}
		var ue *UnknownStrategyError
		if !errors.As(err, &ue) || ue.Name != bad {
			t.Errorf("ByName(%q): error %T does not carry the name", bad, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, `"`+bad+`"`) || !strings.Contains(msg, "balanced, range, roundrobin, leader-aware, sticky") {
			t.Errorf("ByName(%q): message %q lacks value or valid names", bad, msg)
		}
	}
}

func TestOwner(t *testing.T) {
	ps := parts("t", 1, 2, 3)
	a := Assignment{"a": {ps[0], ps[2]}, "b": {ps[1]}, "c": {}}
	for _, tc := range []struct {
		topic string
		id    int32
		want  string
		ok    bool
	}{
		{"t", 0, "a", true}, {"t", 1, "b", true}, {"t", 2, "a", true},
		{"t", 3, "", false}, {"u", 0, "", false},
	} {
		got, ok := a.Owner(tc.topic, tc.id)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Owner(%s,%d) = %q,%v; want %q,%v", tc.topic, tc.id, got, ok, tc.want, tc.ok)
		}
	}
	// Hand-built, unsorted and duplicated: smallest ID wins, deterministically.
	dup := Assignment{"z": {ps[2], ps[0]}, "y": {ps[0]}}
	for range 20 {
		if got, ok := dup.Owner("t", 0); got != "y" || !ok {
			t.Fatalf("Owner on duplicate = %q,%v; want y", got, ok)
		}
	}
	if got, ok := Assignment(nil).Owner("t", 0); got != "" || ok {
		t.Errorf("nil Owner = %q,%v", got, ok)
	}
}

// TestStrategyNames: every strategy of the package carries the name ByName
// knows it by (so members publish what they were configured with), Func
// keeps the name and the function, and ValidName accepts the package's
// names and rejects what cannot travel in a registration.
func TestStrategyNames(t *testing.T) {
	for _, s := range strategies {
		if got := s.fn.Name(); got != s.name {
			t.Errorf("%s strategy: Name() = %q", s.name, got)
		}
		if got := fmt.Sprint(s.fn); got != s.name {
			t.Errorf("%s strategy prints as %q", s.name, got)
		}
		if r := ValidName(s.name); r != "" {
			t.Errorf("ValidName(%q) = %q", s.name, r)
		}
	}
	calls := 0
	custom := Func("mine", func(m []Member, p []Partition) Assignment { calls++; return Range().Assign(m, p) })
	members, ps := []Member{{ID: "a"}, {ID: "b"}}, parts("t", 1, 2, 1, 2, -1)
	if custom.Name() != "mine" || !reflect.DeepEqual(custom.Assign(members, ps), Range().Assign(members, ps)) || calls != 1 {
		t.Errorf("Func: name %q, calls %d", custom.Name(), calls)
	}
	for _, bad := range []string{"", "two words", "tab\t", "nl\n", strings.Repeat("x", 65), "\xff"} {
		if ValidName(bad) == "" {
			t.Errorf("ValidName(%q) accepted", bad)
		}
	}
	if r := ValidName(strings.Repeat("x", 64)); r != "" {
		t.Errorf("64 bytes rejected: %s", r)
	}
}

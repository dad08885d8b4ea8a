package manager

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/zkgroup/zkgroup/manager/assign"
)

// TestChooseStrategy: members publishing no strategy do not count; when
// the published names differ, every member, whatever its own strategy and
// whatever the order it read the members in, computes with the oldest
// publisher's strategy (or with nothing when it does not know it) and lists
// the same differing peers relative to its own.
func TestChooseStrategy(t *testing.T) {
	mine := assign.Func("mine", assign.Range().Assign)
	for _, tc := range []struct {
		name    string
		own     assign.Strategy
		members []member
		use     string // "" : nil
		oldest  string
		peers   map[string]string
		exclude map[string]bool
	}{
		{name: "alone", own: assign.Balanced(), members: []member{{id: "a", strategy: "balanced", czxid: 5}},
			use: "balanced", oldest: "a"},
		{name: "JVM and old zkgroup peers are no mismatch", own: assign.Sticky(),
			members: []member{{id: "a", czxid: 1}, {id: "b", strategy: "sticky", czxid: 7}, {id: "c", czxid: 3}},
			use:     "sticky", oldest: "b"},
		{name: "younger member follows the oldest", own: assign.Sticky(),
			members: []member{{id: "b", strategy: "sticky", czxid: 9}, {id: "a", strategy: "balanced", czxid: 4}},
			use:     "balanced", oldest: "a", peers: map[string]string{"a": "balanced"}},
		{name: "oldest keeps its own", own: assign.Balanced(),
			members: []member{{id: "b", strategy: "sticky", czxid: 9}, {id: "a", strategy: "balanced", czxid: 4}},
			use:     "balanced", oldest: "a", peers: map[string]string{"b": "sticky"}},
		{name: "same zxid: smallest id", own: assign.Range(),
			members: []member{{id: "z", strategy: "range", czxid: 4}, {id: "y", strategy: "roundrobin", czxid: 4}},
			use:     "roundrobin", oldest: "y", peers: map[string]string{"y": "roundrobin"}},
		{name: "oldest custom: claim nothing, be given nothing", own: assign.Balanced(),
			members: []member{{id: "a", strategy: "mine", czxid: 1}, {id: "b", strategy: "balanced", czxid: 2}, {id: "j", czxid: 3}},
			use:     "", oldest: "a", peers: map[string]string{"a": "mine"}, exclude: map[string]bool{"b": true}},
		{name: "own custom oldest", own: mine,
			members: []member{{id: "a", strategy: "mine", czxid: 1}, {id: "b", strategy: "balanced", czxid: 2}, {id: "c", strategy: "mine", czxid: 3}},
			use:     "mine", oldest: "a", peers: map[string]string{"b": "balanced"}, exclude: map[string]bool{"b": true}},
		{name: "younger custom follows a known one", own: mine,
			members: []member{{id: "a", strategy: "sticky", czxid: 1}, {id: "b", strategy: "mine", czxid: 2}},
			use:     "sticky", oldest: "a", peers: map[string]string{"a": "sticky"}},
		{name: "unreadable registration is no mismatch", own: assign.Balanced(),
			members: []member{{id: "a", err: ErrBadRegistration, czxid: 1}, {id: "b", strategy: "balanced", czxid: 2}},
			use:     "balanced", oldest: "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orders := [][]member{tc.members}
			rev := append([]member(nil), tc.members...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			orders = append(orders, rev)
			for _, ms := range orders {
				ch := chooseStrategy(tc.own, ms)
				got := ""
				if ch.use != nil {
					got = ch.use.Name()
				}
				if got != tc.use || ch.oldest != tc.oldest || !reflect.DeepEqual(ch.peers, tc.peers) || !reflect.DeepEqual(ch.exclude, tc.exclude) {
					t.Fatalf("got use %q oldest %q peers %v exclude %v; want %q %q %v %v", got, ch.oldest, ch.peers, ch.exclude,
						tc.use, tc.oldest, tc.peers, tc.exclude)
				}
			}
		})
	}
}

// TestStrategyMismatchError: the error names both members and both
// strategies, says what this member does, and matches ErrStrategyMismatch.
func TestStrategyMismatchError(t *testing.T) {
	var err error = &StrategyMismatchError{Member: "m1", Strategy: "sticky", Peer: "m2", PeerStrategy: "balanced",
		Oldest: "m2", InForce: "balanced"}
	var se *StrategyMismatchError
	if !errors.Is(err, ErrStrategyMismatch) || !errors.As(err, &se) || se.Peer != "m2" {
		t.Fatalf("%v does not match", err)
	}
	for _, want := range []string{`"m1"`, `"sticky"`, `"m2"`, `"balanced"`, "computing with"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %s", err, want)
		}
	}
	err = &StrategyMismatchError{Member: "m1", Strategy: "balanced", Peer: "m2", PeerStrategy: "mine", Oldest: "m2"}
	if !strings.Contains(err.Error(), "claiming nothing") {
		t.Errorf("%q does not say it claims nothing", err)
	}
}

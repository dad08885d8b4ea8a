package manager

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager/assign"
)

// TestFollowers: the assignment node is used only while every registered
// member publishing a strategy follows it; the oldest of them writes it.
func TestFollowers(t *testing.T) {
	m := func(id string, czxid int64, strategy string, version int, away bool) member {
		return member{id: id, czxid: czxid, strategy: strategy, assignment: version, away: away}
	}
	for _, c := range []struct {
		name    string
		members []member
		all     bool
		writer  string
	}{
		{"none", nil, false, ""},
		{"oldest writes", []member{m("b", 5, "balanced", 1, false), m("a", 7, "balanced", 1, false)}, true, "b"},
		{"czxid tie: smallest id", []member{m("b", 5, "balanced", 1, false), m("a", 5, "balanced", 1, false)}, true, "a"},
		{"an older zkgroup", []member{m("a", 1, "balanced", 1, false), m("b", 2, "balanced", 0, false)}, false, ""},
		{"a JVM consumer does not count", []member{m("j", 1, "", 0, false), m("b", 2, "balanced", 1, false)}, true, "b"},
		{"a member away does not count or write", []member{m("x", 1, "balanced", 0, true), m("b", 2, "balanced", 1, false)}, true, "b"},
		{"only JVM consumers", []member{m("j", 1, "", 0, false)}, false, ""},
	} {
		all, writer, czxid := followers(c.members)
		if all != c.all || writer != c.writer {
			t.Errorf("%s: followers = %v, %q; want %v, %q", c.name, all, writer, c.all, c.writer)
		}
		if i := slices.IndexFunc(c.members, func(m member) bool { return m.id == writer }); writer != "" && c.members[i].czxid != czxid {
			t.Errorf("%s: the writer's czxid %d, want %d", c.name, czxid, c.members[i].czxid)
		}
	}
}

// TestStoredFresh: a node is followed only if written since the writer
// registered, and only when it is usable.
func TestStoredFresh(t *testing.T) {
	for _, c := range []struct {
		name  string
		s     storedAssignment
		fresh bool
	}{
		{"written after the writer registered", storedAssignment{exists: true, mzxid: 11}, true},
		{"left by an earlier group", storedAssignment{exists: true, mzxid: 9}, false},
		{"missing", storedAssignment{mzxid: 11}, false},
		{"malformed", storedAssignment{exists: true, mzxid: 11, err: zkdata.ErrMalformed}, false},
	} {
		if got := c.s.freshFor(10); got != c.fresh {
			t.Errorf("%s: freshFor = %v, want %v", c.name, got, c.fresh)
		}
	}
}

// TestAssignmentDigest: the digest changes with the strategy, a member, a
// member's topics, a partition and a leader, never with an owner.
func TestAssignmentDigest(t *testing.T) {
	members := []assign.Member{{ID: "a", Topics: []string{"t"}}, {ID: "b", Topics: []string{"t"}}}
	parts := []assign.Partition{{Topic: "t", ID: 0, Leader: 1}, {Topic: "t", ID: 1, Leader: 2}}
	base := assignmentDigest("balanced", members, parts)
	owned := slices.Clone(parts)
	owned[0].Owner = "a"
	if d := assignmentDigest("balanced", members, owned); d != base {
		t.Errorf("an owner changed the digest")
	}
	changed := map[string]func() string{
		"strategy": func() string { return assignmentDigest("sticky", members, parts) },
		"member": func() string {
			return assignmentDigest("balanced", []assign.Member{members[0], {ID: "c", Topics: []string{"t"}}}, parts)
		},
		"topics": func() string {
			return assignmentDigest("balanced", []assign.Member{members[0], {ID: "b", Topics: []string{"t", "u"}}}, parts)
		},
		"partition": func() string { return assignmentDigest("balanced", members, parts[:1]) },
		"leader": func() string {
			p := slices.Clone(parts)
			p[1].Leader = 3
			return assignmentDigest("balanced", members, p)
		},
		"boundaries": func() string {
			return assignmentDigest("balanced", []assign.Member{{ID: "at", Topics: nil}, {ID: "b", Topics: []string{"t"}}}, parts)
		},
	}
	for what, f := range changed {
		if f() == base {
			t.Errorf("a change of %s kept the digest", what)
		}
	}
}

// TestStoredRoundTrip: an assignment stored and read back gives every
// partition the same member, and Balanced computed from it as owners is
// the same assignment (so members reading it agree without the owners).
func TestStoredRoundTrip(t *testing.T) {
	var parts []assign.Partition
	for _, topic := range []string{"t", "u"} {
		for p := range int32(7) {
			parts = append(parts, assign.Partition{Topic: topic, ID: p, Leader: p % 3})
		}
	}
	members := []assign.Member{{ID: "m1", Topics: []string{"t", "u"}}, {ID: "m2", Topics: []string{"t", "u"}},
		{ID: "m3", Topics: []string{"t"}}}
	ids := []string{"m3", "m1", "m2"}
	a := assign.Balanced().Assign(members, parts)
	digest := assignmentDigest("balanced", members, parts)
	data, err := storedData(digest, ids, parts, a)
	if err != nil {
		t.Fatal(err)
	}
	ga, err := zkdata.ParseGroupAssignment(data)
	if err != nil {
		t.Fatal(err)
	}
	if ga.Digest != digest || !slices.Equal(ga.Members, []string{"m1", "m2", "m3"}) {
		t.Fatalf("stored %+v", ga)
	}
	back := fromStored(ga, parts)
	owners := func(a assign.Assignment) map[TopicPartition]string {
		out := map[TopicPartition]string{}
		for id, ps := range a {
			for _, p := range ps {
				out[TopicPartition{Topic: p.Topic, Partition: p.ID}] = id
			}
		}
		return out
	}
	want := owners(a)
	got := owners(back)
	if len(got) != len(parts) || len(want) != len(parts) {
		t.Fatalf("%d and %d partitions assigned, want %d", len(got), len(want), len(parts))
	}
	for tp, id := range want {
		if got[tp] != id {
			t.Errorf("%v: stored %q, computed %q", tp, got[tp], id)
		}
	}
	withOwners := slices.Clone(parts)
	for i := range withOwners {
		withOwners[i].Owner = ga.Owner(withOwners[i].Topic, withOwners[i].ID)
	}
	again := owners(assign.Balanced().Assign(members, withOwners))
	for tp, id := range want {
		if again[tp] != id {
			t.Errorf("%v: computed from the stored one %q, stored %q", tp, again[tp], id)
		}
	}
	// A member not given to the strategy is not stored.
	a["ghost"] = parts[:1]
	if data, err = storedData(digest, ids, parts, a); err != nil {
		t.Fatal(err)
	}
	if ga, _ = zkdata.ParseGroupAssignment(data); slices.Contains(ga.Members, "ghost") {
		t.Errorf("a member outside the input was stored")
	}
}

// TestStoredFits: a stored assignment with the input's digest is followed
// only if it gives each partition somebody subscribes to such a member;
// sameAsStored compares it with a computed one.
func TestStoredFits(t *testing.T) {
	input := []assign.Member{{ID: "a", Topics: []string{"t"}}, {ID: "b", Topics: []string{"t", "u"}}}
	parts := []assign.Partition{{Topic: "t", ID: 0}, {Topic: "t", ID: 1}, {Topic: "u", ID: 0}, {Topic: "v", ID: 0}}
	ga := func(t0, t1, u0 int32) zkdata.GroupAssignment {
		return zkdata.GroupAssignment{Version: 1, Digest: "d", Members: []string{"a", "b"},
			Topics: map[string][]int32{"t": {t0, t1}, "u": {u0}}}
	}
	for _, c := range []struct {
		name string
		a    zkdata.GroupAssignment
		fits bool
	}{
		{"fits (v has no subscriber)", ga(0, 1, 1), true},
		{"a partition left to nobody", ga(0, -1, 1), false},
		{"a member not subscribed", ga(0, 1, 0), false},
		{"a topic missing", zkdata.GroupAssignment{Version: 1, Digest: "d", Members: []string{"a", "b"},
			Topics: map[string][]int32{"t": {0, 1}}}, false},
	} {
		if got := storedFits(c.a, input, parts); got != c.fits {
			t.Errorf("%s: storedFits = %v, want %v", c.name, got, c.fits)
		}
	}
	a := assign.Assignment{"a": {parts[0]}, "b": {parts[1], parts[2]}}
	if !sameAsStored(ga(0, 1, 1), a, parts) {
		t.Errorf("sameAsStored: the same assignment differs")
	}
	if sameAsStored(ga(0, 0, 1), a, parts) || sameAsStored(ga(0, 1, -1), a, parts) {
		t.Errorf("sameAsStored: a different assignment is the same")
	}
	if sameAsStored(ga(0, 1, 1), assign.Assignment{"a": {parts[0]}, "b": {parts[1]}}, parts) {
		t.Errorf("sameAsStored: a partition stored but not assigned is the same")
	}
}

// TestAssignmentDigestStream: the digest is SHA-256 over the fields
// written one after another, each string after its length, as members of
// earlier releases compute it (a group mixes them during an upgrade):
// however the fields are buffered, the bytes hashed stay the same.
func TestAssignmentDigestStream(t *testing.T) {
	reference := func(strategy string, members []assign.Member, parts []assign.Partition) string {
		h := sha256.New()
		num := func(v int64) { h.Write(binary.BigEndian.AppendUint64(nil, uint64(v))) }
		str := func(s string) { num(int64(len(s))); h.Write([]byte(s)) }
		str(strategy)
		num(int64(len(members)))
		for _, m := range members {
			str(m.ID)
			num(int64(len(m.Topics)))
			for _, tp := range m.Topics {
				str(tp)
			}
		}
		num(int64(len(parts)))
		for _, p := range parts {
			str(p.Topic)
			num(int64(p.ID))
			num(int64(p.Leader))
		}
		return hex.EncodeToString(h.Sum(nil)[:16])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		var members []assign.Member
		var parts []assign.Partition
		topics := 1 + rng.IntN(300)
		for m := range 1 + rng.IntN(60) {
			am := assign.Member{ID: fmt.Sprintf("member-%d-%s", m, strings.Repeat("x", rng.IntN(80)))}
			for tp := range topics {
				am.Topics = append(am.Topics, fmt.Sprintf("topic-%d", tp))
			}
			members = append(members, am)
		}
		for tp := range topics {
			for p := range rng.IntN(40) {
				parts = append(parts, assign.Partition{Topic: fmt.Sprintf("topic-%d", tp), ID: int32(p), Leader: int32(rng.IntN(5))})
			}
		}
		strategy := "balanced"
		if round == 0 {
			strategy = strings.Repeat("s", 70<<10) // longer than a chunk
		}
		if got, want := assignmentDigest(strategy, members, parts), reference(strategy, members, parts); got != want {
			t.Fatalf("round %d: digest %s, written field by field %s", round, got, want)
		}
	}
}

// TestStoredUnassignedRows: a topic's row has a slot for every partition
// up to its highest ID, -1 where nobody is given one (a topic nobody
// subscribes to, an ID missing from the metadata).
func TestStoredUnassignedRows(t *testing.T) {
	parts := []assign.Partition{{Topic: "t", ID: 0}, {Topic: "t", ID: 2}, {Topic: "v", ID: 0}, {Topic: "v", ID: 1}}
	a := assign.Assignment{"m1": {parts[1]}, "m2": {parts[0]}}
	data, err := storedData("d", []string{"m2", "m1"}, parts, a)
	if err != nil {
		t.Fatal(err)
	}
	ga, err := zkdata.ParseGroupAssignment(data)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ga.Topics["t"], []int32{1, -1, 0}) || !slices.Equal(ga.Topics["v"], []int32{-1, -1}) {
		t.Errorf("rows %v, want t [1 -1 0] and v [-1 -1]", ga.Topics)
	}
}

package manager

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkgroup/zkgroup/manager/assign"
	"github.com/zkgroup/zkgroup/subscription"
)

func TestJavaHash(t *testing.T) {
	// Values printed by Java 17's String.hashCode (the last: 10 UTF-16 units, a surrogate pair among them).
	for s, want := range map[TopicPartition]int32{
		{Topic: "mix", Partition: 0}:     -1915345000,
		{Topic: "orders", Partition: 11}: 458862993,
		{Topic: "été-😀", Partition: 3}:   -1730276215,
	} {
		if got := javaHash(s); got != want {
			t.Errorf("javaHash(%v) = %d, want %d", s, got, want)
		}
	}
}

// oldMember is a registration as a member reads it: zkgroup's (strategy
// set, one stream) or an old consumer's (no strategy).
func oldMember(t *testing.T, id, strategy string, streams map[string]int) member {
	t.Helper()
	topics := make([]string, 0, len(streams))
	for tp := range streams {
		topics = append(topics, tp)
	}
	sub, err := subscription.Static(topics...)
	if err != nil {
		t.Fatal(err)
	}
	return member{id: id, sub: sub, strategy: strategy, streams: streams}
}

func partsOf(topic string, n int32) []assign.Partition {
	out := make([]assign.Partition, n)
	for i := range out {
		out[i] = assign.Partition{Topic: topic, ID: int32(i)}
	}
	return out
}

func TestOldConsumerAssign(t *testing.T) {
	// Members g_h-1-aaaa (the JVM, two streams) and g_h-2-bbbb: threads
	// ...-1-aaaa-0, ...-1-aaaa-1, ...-2-bbbb-0.
	ms := []member{
		oldMember(t, "g_h-1-aaaa", "", map[string]int{"t": 2}),
		oldMember(t, "g_h-2-bbbb", assign.NameRange, map[string]int{"t": 1}),
	}
	got := oldConsumerAssign(assign.NameRange, ms, []string{"t"}, partsOf("t", 5))
	want := []string{"g_h-1-aaaa", "g_h-1-aaaa", "g_h-1-aaaa", "g_h-1-aaaa", "g_h-2-bbbb"} // 2,2,1
	for p, id := range want {
		if g := got[TopicPartition{Topic: "t", Partition: int32(p)}]; g != id {
			t.Errorf("range: t/%d owned by %q, want %q", p, g, id)
		}
	}
	// Roundrobin over "mix": the hash order of [mix,0..3] is 0,1,2,3
	// (one character apart), dealt to the three threads in turn.
	got = oldConsumerAssign(assign.NameRoundRobin, []member{
		oldMember(t, "a", "", map[string]int{"mix": 2}),
		oldMember(t, "b", assign.NameRoundRobin, map[string]int{"mix": 1}),
	}, []string{"mix"}, partsOf("mix", 4))
	for p, id := range []string{"a", "a", "b", "a"} {
		if g := got[TopicPartition{Topic: "mix", Partition: int32(p)}]; g != id {
			t.Errorf("roundrobin: mix/%d owned by %q, want %q", p, g, id)
		}
	}
}

func TestOldConsumerConflicts(t *testing.T) {
	jvm := func(streams int) member { return oldMember(t, "g_h-1-aaaa", "", map[string]int{"t": streams}) }
	zkg := func(s assign.Strategy) member {
		return oldMember(t, "g_h-2-bbbb", s.Name(), map[string]int{"t": 1})
	}
	all := func(members []assign.Member, parts []assign.Partition) assign.Assignment {
		out := assign.Assignment{}
		for _, m := range members {
			out[m.ID] = nil
		}
		out[members[len(members)-1].ID] = parts
		return out
	}
	for _, tc := range []struct {
		name    string
		use     assign.Strategy
		members []member
		parts   []assign.Partition
		reason  string // "" no conflict
	}{
		{"range, one stream", assign.Range(), []member{jvm(1), zkg(assign.Range())}, partsOf("t", 4), ""},
		{"roundrobin, one stream", assign.RoundRobin(), []member{jvm(1), zkg(assign.RoundRobin())}, partsOf("t", 4), ""},
		{"no old consumer", assign.Range(), []member{zkg(assign.Range())}, partsOf("t", 4), ""},
		{"range, two streams", assign.Range(), []member{jvm(2), zkg(assign.Range())}, partsOf("t", 4), "registers 2 streams"},
		{"roundrobin, 11 partitions", assign.RoundRobin(), []member{jvm(1), zkg(assign.RoundRobin())}, partsOf("t", 11), "Java hash codes"},
		{"another strategy", assign.Func("all-to-last", all), []member{jvm(1), zkg(assign.Func("all-to-last", all))}, partsOf("t", 4), "range or roundrobin"},
		{"prefix ids", assign.Range(), []member{oldMember(t, "a", "", map[string]int{"t": 1}),
			oldMember(t, "a+", assign.NameRange, map[string]int{"t": 1})}, partsOf("t", 4), "prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := oldConsumerConflicts("self", tc.use, tc.members, nil, []string{"t"}, tc.parts)
			if tc.reason == "" {
				if len(got) != 0 {
					t.Fatalf("conflicts %v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d conflicts %v, want 1 (the member publishing no strategy)", len(got), got)
			}
			e := got[0]
			if e.Peer != tc.members[0].id || e.Differ == 0 || len(e.Partitions) == 0 || !strings.Contains(e.Reason, tc.reason) {
				t.Errorf("conflict %+v: want peer %q, differing partitions, and a reason with %q", e, tc.members[0].id, tc.reason)
			}
			if !errors.Is(&e, ErrIncompatibleMember) || !strings.Contains(e.Error(), e.Peer) {
				t.Errorf("error %q does not unwrap to ErrIncompatibleMember or name the peer", e.Error())
			}
		})
	}
}

package zkdata

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

// checkErr fails unless err is nil or a *MalformedError wrapping ErrMalformed
// whose message starts with want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		return
	}
	var me *MalformedError
	if !errors.Is(err, ErrMalformed) || !errors.As(err, &me) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %q is not a *MalformedError starting with %q", err, want)
	}
}

func FuzzParseBroker(f *testing.F) {
	for _, s := range []string{
		`{"version":4,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1","endpoints":["PLAINTEXT://h:9092","SSL://h:9093"],"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},"rack":"r1"}`,
		`{"version":5,"host":null,"port":-1,"endpoints":["SSL://[::1]:9093"],"features":{}}`,
		`{"version":1,"host":"h","port":9092}`,
		`{"endpoints":["FOO"]}`, `{`, `null`, ``,
	} {
		f.Add(s, "SSL")
	}
	f.Fuzz(func(t *testing.T, data, listener string) {
		b, err := ParseBroker(3, []byte(data))
		checkErr(t, err, "zkdata: broker 3: ")
		if err != nil {
			return
		}
		if len(b.Endpoints) == 0 {
			t.Fatal("parsed broker has no endpoints")
		}
		for _, l := range []string{"", listener, b.Endpoints[0].Listener} {
			addr, err := b.Address(l)
			if err != nil {
				if !errors.Is(err, ErrNoListener) {
					t.Fatalf("Address(%q) = %v", l, err)
				}
				continue
			}
			if addr == "" {
				t.Fatalf("Address(%q) is empty", l)
			}
		}
		// Every endpoint re-parses to itself.
		for _, e := range b.Endpoints {
			back, reason := parseEndpoint(e.String())
			if reason != "" || back != e {
				t.Fatalf("endpoint %+v -> %q -> %+v (%s)", e, e.String(), back, reason)
			}
		}
	})
}

func FuzzParseTopic(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"partitions":{"0":[1,2,3],"1":[2,3,1]}}`,
		`{"version":2,"partitions":{"0":[1]},"adding_replicas":{"0":[2]},"removing_replicas":{},"topic_id":"abc"}`,
		`{"partitions":{"-1":[1]}}`, `{"partitions":{"0":[1,`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		tp, err := ParseTopic("t", []byte(data))
		checkErr(t, err, `zkdata: topic "t": `)
		if err == nil {
			if tp.Partitions == nil {
				t.Fatal("nil Partitions")
			}
			for p := range tp.Partitions {
				if p < 0 {
					t.Fatalf("negative partition %d", p)
				}
			}
		}
	})
}

func FuzzParseMemberRegistration(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"subscription":{"topicA":1,"topicB":1},"pattern":"static","timestamp":"1440000000000"}`,
		`{"version":1,"subscription":{"a.*":1},"pattern":"white_list","timestamp":1440000000000}`,
		`{"version":1,"subscription":{"a":0},"pattern":"black_list"}`,
		`{"pattern":"static","subscription":{"a":1},"timestamp":"-1"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		m, err := ParseMemberRegistration("c", []byte(data))
		checkErr(t, err, `zkdata: member "c": `)
		if err != nil {
			return
		}
		// Whatever parses and Marshal accepts must survive a round trip.
		memberRoundTrip(t, m)
	})
}

func FuzzMemberRoundTrip(f *testing.F) {
	f.Add(1, "static", "topicA", "topicB", 1, int64(1440000000000))
	f.Add(0, "white_list", "a.*|<b>&", "", 2, int64(0))
	f.Add(-3, "x", "\u2028\x00", "\"", 7, int64(9223372036854775807))
	f.Fuzz(func(t *testing.T, version int, pattern, k1, k2 string, n int, ts int64) {
		m := MemberRegistration{Version: version, Pattern: pattern, Timestamp: ts,
			Subscription: map[string]int{k1: n}}
		if k2 != "" {
			m.Subscription[k2] = n
		}
		memberRoundTrip(t, m)
	})
}

// memberRoundTrip checks that m, if Marshal accepts it (else with the
// error's prefix), parses back equal (a zero Version as the current one).
func memberRoundTrip(t *testing.T, m MemberRegistration) {
	t.Helper()
	out, err := m.Marshal()
	if err != nil {
		checkErr(t, err, "zkdata: member registration: ")
		return
	}
	back, err := ParseMemberRegistration("c", out)
	if err != nil {
		t.Fatalf("Parse(Marshal(%+v) = %s): %v", m, out, err)
	}
	if m.Version == 0 {
		m.Version = MemberRegistrationVersion
	}
	if !equalMember(m, back) {
		t.Fatalf("round trip: %+v -> %s -> %+v", m, out, back)
	}
}

func equalMember(a, b MemberRegistration) bool {
	return a.Version == b.Version && a.Pattern == b.Pattern && a.Timestamp == b.Timestamp &&
		maps.Equal(a.Subscription, b.Subscription)
}

func FuzzOffset(f *testing.F) {
	for _, s := range []string{"0", "42", " 7\n", "-1", "+1", "9223372036854775808", ""} {
		f.Add(s, int64(42))
	}
	f.Fuzz(func(t *testing.T, data string, n int64) {
		got, err := ParseOffset("t", 0, []byte(data))
		checkErr(t, err, `zkdata: offset "t"/0: `)
		if err == nil && got < 0 {
			t.Fatalf("negative offset %d", got)
		}
		back, err := ParseOffset("t", 0, FormatOffset(n))
		if n < 0 {
			if err == nil {
				t.Fatalf("negative offset %d accepted", n)
			}
			return
		}
		if err != nil || back != n {
			t.Fatalf("round trip of %d: %d, %v", n, back, err)
		}
	})
}

func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{"0", "1001", "-1", "01", "2147483648", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) (int32, error){ParseBrokerID, ParsePartitionID} {
			id, err := parse(s)
			checkErr(t, err, "zkdata: ")
			if err == nil && (id < 0 || OwnerPath("g", "t", id) != "/consumers/g/owners/t/"+s) {
				t.Fatalf("%q parsed to non-canonical %d", s, id)
			}
		}
	})
}

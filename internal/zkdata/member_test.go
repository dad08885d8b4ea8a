package zkdata

import (
	"errors"
	"strings"
	"testing"
)

func TestMemberMarshal(t *testing.T) {
	tests := []struct {
		name string
		m    MemberRegistration
		want string
	}{
		{
			name: "static",
			m: MemberRegistration{Version: 1, Pattern: "static", Timestamp: 1440000000000,
				Subscription: map[string]int{"topicB": 1, "topicA": 1}},
			want: `{"version":1,"subscription":{"topicA":1,"topicB":1},"pattern":"static","timestamp":"1440000000000"}`,
		},
		{
			name: "whitelist with HTML characters, version defaulted",
			m:    MemberRegistration{Pattern: "white_list", Subscription: map[string]int{"a&b|<c>": 2}},
			want: `{"version":1,"subscription":{"a&b|<c>":2},"pattern":"white_list","timestamp":"0"}`,
		},
		{
			name: "host and client id for operator tools",
			m:    MemberRegistration{Version: 1, Pattern: "static", Subscription: map[string]int{"t": 1}, Timestamp: 5, Host: "h1", ClientID: "zkgroup"},
			want: `{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"5","host":"h1","client_id":"zkgroup"}`,
		},
		{
			name: "strategy name after the operator fields, the JVM's fields unchanged",
			m:    MemberRegistration{Version: 1, Pattern: "static", Subscription: map[string]int{"t": 1}, Timestamp: 5, Host: "h1", ClientID: "zkgroup", Strategy: "balanced"},
			want: `{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"5","host":"h1","client_id":"zkgroup","zkgroup_strategy":"balanced"}`,
		},
		{
			name: "assignment node version after the strategy",
			m:    MemberRegistration{Version: 1, Pattern: "static", Subscription: map[string]int{"t": 1}, Timestamp: 5, Strategy: "balanced", Assignment: 1},
			want: `{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"5","zkgroup_strategy":"balanced","zkgroup_assignment":1}`,
		},
		{
			name: "escaping",
			m:    MemberRegistration{Version: 1, Pattern: "black_list", Subscription: map[string]int{`a\.b"`: 1}},
			want: `{"version":1,"subscription":{"a\\.b\"":1},"pattern":"black_list","timestamp":"0"}`,
		},
	}
	for _, tt := range tests {
		got, err := tt.m.Marshal()
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: Marshal = %s, %v\nwant %s", tt.name, got, err, tt.want)
		}
	}
}

func TestMemberMarshalErrors(t *testing.T) {
	ok := map[string]int{"a": 1}
	tests := []struct {
		m    MemberRegistration
		want string
	}{
		{MemberRegistration{Subscription: ok}, "zkdata: member registration: pattern: empty"},
		{MemberRegistration{Pattern: "static"}, "subscription: empty"},
		{MemberRegistration{Pattern: "static", Subscription: map[string]int{"a": 0}}, `subscription "a": stream count 0 below 1`},
		{MemberRegistration{Pattern: "static", Subscription: ok, Timestamp: -1}, `timestamp "-1": negative`},
		{MemberRegistration{Pattern: "static", Subscription: map[string]int{"\xff": 1}}, "invalid UTF-8"},
		{MemberRegistration{Pattern: "st\xffatic", Subscription: ok}, "pattern"},
		{MemberRegistration{Pattern: "static", Subscription: ok, Strategy: "\xff"}, "zkgroup_strategy"},
	}
	for _, tt := range tests {
		got, err := tt.m.Marshal()
		if got != nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Marshal(%+v) = %s, %v; want error containing %q", tt.m, got, err, tt.want)
		}
	}
}

func TestParseMemberRegistration(t *testing.T) {
	wantParsed(t, func(data []byte) (MemberRegistration, error) { return ParseMemberRegistration("c1", data) }, []parsed[MemberRegistration]{
		{
			name: "JVM static",
			data: `{"version":1,"subscription":{"topicA":1,"topicB":1},"pattern":"static","timestamp":"1440000000000"}`,
			want: MemberRegistration{Version: 1, Pattern: "static", Timestamp: 1440000000000,
				Subscription: map[string]int{"topicA": 1, "topicB": 1}},
		},
		{
			name: "JVM white_list without timestamp",
			data: `{"version":1,"subscription":{"orders.*":1},"pattern":"white_list"}`,
			want: MemberRegistration{Version: 1, Pattern: "white_list", Subscription: map[string]int{"orders.*": 1}},
		},
		{
			name: "integer timestamp in milliseconds",
			data: `{"pattern":"static","subscription":{"t":1},"timestamp":1440000000000,"version":1}`,
			want: MemberRegistration{Version: 1, Pattern: "static", Timestamp: 1440000000000, Subscription: map[string]int{"t": 1}},
		},
		{
			name: "kazoo-go integer timestamp in seconds",
			data: `{"pattern":"static","subscription":{"t":1},"timestamp":1440000000,"version":1}`,
			want: MemberRegistration{Version: 1, Pattern: "static", Timestamp: 1440000000000, Subscription: map[string]int{"t": 1}},
		},
		{
			name: "a string timestamp is milliseconds however small",
			data: `{"pattern":"static","subscription":{"t":1},"timestamp":"1440000000","version":1}`,
			want: MemberRegistration{Version: 1, Pattern: "static", Timestamp: 1440000000, Subscription: map[string]int{"t": 1}},
		},
		{
			name: "null timestamp, unknown fields, zero count",
			data: `{"version":1,"subscription":{"x":0},"pattern":"black_list","timestamp":null,"host":"h","extra":[1]}`,
			want: MemberRegistration{Version: 1, Pattern: "black_list", Subscription: map[string]int{"x": 0}},
		},
		{
			name: "zkgroup with a strategy",
			data: `{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"5","host":"h1","client_id":"zkgroup","zkgroup_strategy":"sticky"}`,
			want: MemberRegistration{Version: 1, Pattern: "static", Timestamp: 5, Subscription: map[string]int{"t": 1}, Strategy: "sticky"},
		},
		{
			name: "null strategy is no strategy",
			data: `{"subscription":{"t":1},"pattern":"static","zkgroup_strategy":null}`,
			want: MemberRegistration{Pattern: "static", Subscription: map[string]int{"t": 1}},
		},
	})
}

func TestParseMemberRegistrationErrors(t *testing.T) {
	wantMalformed(t, func(data []byte) error {
		_, err := ParseMemberRegistration("g-1", data)
		return err
	}, []malformedCase{
		{`{"version":1,"subscription":{"topicA":1},"pattern":"sta`, `zkdata: member "g-1": invalid JSON`},
		{`{"version":1,"subscription":{"a":1}}`, `zkdata: member "g-1": pattern: missing`},
		{`{"subscription":{"a":1},"pattern":""}`, "pattern: empty"},
		{`{"subscription":{"a":1},"pattern":1}`, "pattern: JSON number where string expected"},
		{`{"pattern":"static"}`, "subscription: missing or empty"},
		{`{"pattern":"static","subscription":{}}`, "subscription: missing or empty"},
		{`{"pattern":"static","subscription":["a"]}`, "subscription: JSON array"},
		{`{"pattern":"static","subscription":{"a":"1"}}`, "JSON string where int expected"},
		{`{"pattern":"static","subscription":{"a":1.5}}`, "JSON number 1.5 where int expected"},
		{`{"pattern":"static","subscription":{"a":-1}}`, `subscription "a": negative stream count -1`},
		{`{"pattern":"static","subscription":{"a":1},"timestamp":"abc"}`, `timestamp "\"abc\"": not a decimal integer`},
		{`{"pattern":"static","subscription":{"a":1},"timestamp":""}`, "timestamp"},
		{`{"pattern":"static","subscription":{"a":1},"timestamp":"-5"}`, "negative"},
		{`{"pattern":"static","subscription":{"a":1},"timestamp":-5}`, "negative"},
		{`{"pattern":"static","subscription":{"a":1},"timestamp":1.5}`, "not a decimal integer"},
		{`{"pattern":"static","subscription":{"a":1},"timestamp":1e12}`, "not a decimal integer"},
		{`{"pattern":"static","subscription":{"a":1},"timestamp":"99999999999999999999"}`, "out of range"},
		{`{"pattern":"static","subscription":{"a":1},"timestamp":true}`, "want a string or an integer"},
		{`{"pattern":"static","subscription":{"a":1},"version":"1"}`, "version: JSON string"},
		{`{"pattern":"static","subscription":{"a":1},"zkgroup_strategy":7}`, "zkgroup_strategy: JSON number where string expected"},
		{`[]`, "not a JSON object"},
	})
}

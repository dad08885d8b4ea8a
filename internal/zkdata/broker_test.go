package zkdata

import (
	"errors"
	"strings"
	"testing"
)

func TestParseBroker(t *testing.T) {
	wantParsed(t, func(data []byte) (Broker, error) { return ParseBroker(1, data) }, []parsed[Broker]{
		{
			name: "version 4 two listeners",
			data: `{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},` +
				`"endpoints":["PLAINTEXT://kafka1.example.com:9092","SSL://kafka1.example.com:9093"],` +
				`"rack":"r1","jmx_port":-1,"host":"kafka1.example.com","timestamp":"1440000000000","port":9092,"version":4}`,
			want: Broker{ID: 1, Host: "kafka1.example.com", Port: 9092, Rack: "r1", Version: 4,
				Endpoints: []Endpoint{
					{Listener: "PLAINTEXT", Host: "kafka1.example.com", Port: 9092},
					{Listener: "SSL", Host: "kafka1.example.com", Port: 9093},
				},
				SecurityProtocols: map[string]string{"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"},
			},
		},
		{
			name: "version 5 with features, SSL and SASL only",
			data: `{"features":{"metadata.version":{"min_version":1,"max_version":7}},` +
				`"listener_security_protocol_map":{"SSL":"SSL","SASL_SSL":"SASL_SSL"},` +
				`"endpoints":["SSL://b1:9093","SASL_SSL://b1:9094"],"rack":null,` +
				`"jmx_port":9999,"host":null,"timestamp":"1700000000000","port":-1,"version":5}`,
			want: Broker{ID: 1, Port: -1, Version: 5,
				Endpoints: []Endpoint{
					{Listener: "SSL", Host: "b1", Port: 9093},
					{Listener: "SASL_SSL", Host: "b1", Port: 9094},
				},
				SecurityProtocols: map[string]string{"SSL": "SSL", "SASL_SSL": "SASL_SSL"},
			},
		},
		{
			name: "ipv6 bracketed and bare",
			data: `{"version":4,"host":null,"port":-1,"endpoints":["PLAINTEXT://[::1]:9092","SSL://fe80::1%eth0:9093"],` +
				`"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"}}`,
			want: Broker{ID: 1, Port: -1, Version: 4,
				Endpoints: []Endpoint{
					{Listener: "PLAINTEXT", Host: "::1", Port: 9092},
					{Listener: "SSL", Host: "fe80::1%eth0", Port: 9093},
				},
				SecurityProtocols: map[string]string{"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"},
			},
		},
		{
			name: "version 1 legacy host and port",
			data: `{"jmx_port":-1,"timestamp":"1400000000000","host":"old","version":1,"port":9092}`,
			want: Broker{ID: 1, Host: "old", Port: 9092, Version: 1,
				Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "old", Port: 9092}}},
		},
	})
}

func TestParseBrokerErrors(t *testing.T) {
	wantMalformed(t, func(data []byte) error {
		_, err := ParseBroker(3, data)
		return err
	}, []malformedCase{
		{``, "zkdata: broker 3: empty data"},
		{`null`, `zkdata: broker 3: "null": not a JSON object`},
		{`[1]`, "not a JSON object"},
		{`{"version":4,"endpoints":["PLAINTEXT://h:9092"`, "zkdata: broker 3: invalid JSON"},
		{`{"version":4,"endpoints":["PLAINTEXT://h:9092","FOO"]}`, `zkdata: broker 3: endpoints[1] "FOO": no "://"`},
		{`{"endpoints":["://h:1"]}`, `endpoints[0] "://h:1": empty listener name`},
		{`{"endpoints":["SSL://h"]}`, `endpoints[0] "SSL://h": no port`},
		{`{"endpoints":["SSL://:9093"]}`, "empty host"},
		{`{"endpoints":["SSL://h:0"]}`, `port "0" not in 1..65535`},
		{`{"endpoints":["SSL://h:65536"]}`, `port "65536"`},
		{`{"endpoints":["SSL://h:-1"]}`, `port "-1"`},
		{`{"endpoints":["SSL://h/x:1"]}`, `'/' not allowed in host`},
		{`{"endpoints":["SSL://[::1:1"]}`, "bad bracketed host"},
		{`{"endpoints":[""]}`, `endpoints[0]: empty`},
		{`{"endpoints":"PLAINTEXT://h:1"}`, "zkdata: broker 3: endpoints: JSON string where []string expected"},
		{`{"endpoints":[1]}`, "JSON number where string expected"},
		{`{"port":"9092","host":"h"}`, "port: JSON string where int expected"},
		{`{"host":"h","port":70000}`, `port "70000": out of range`},
		{`{"host":"h","port":-1}`, "no endpoints and no legacy host and port"},
		{`{"version":"4","endpoints":["A://h:1"]}`, "version: JSON string"},
		{`{"listener_security_protocol_map":["SSL"],"endpoints":["A://h:1"]}`, "listener_security_protocol_map"},
		{`{"rack":7,"endpoints":["A://h:1"]}`, "rack: JSON number"},
		{`{}`, "no endpoints"},
	})
}

func TestBrokerAddress(t *testing.T) {
	twoListeners := `{"version":4,"host":"h1","port":9092,"endpoints":["PLAINTEXT://h1:9092","SSL://h1:9093"],` +
		`"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"}}`
	sslOnly := `{"version":4,"host":null,"port":-1,"endpoints":["SSL://h2:9093","SASL_SSL://h2:9094"],` +
		`"listener_security_protocol_map":{"SSL":"SSL","SASL_SSL":"SASL_SSL"}}`
	internal := `{"version":4,"host":null,"port":-1,"endpoints":["EXTERNAL://ext:9093","INTERNAL://int:9092"],` +
		`"listener_security_protocol_map":{"EXTERNAL":"SASL_SSL","INTERNAL":"PLAINTEXT"}}`
	ipv6 := `{"version":4,"host":null,"port":-1,"endpoints":["PLAINTEXT://[::1]:9092","SSL://::2:9093"]}`
	legacyOther := `{"version":4,"host":"legacy","port":9092,"endpoints":["REPLICATION://r:9091"]}`
	tests := []struct {
		name, data, listener, want, wantErr string
	}{
		{"default picks PLAINTEXT", twoListeners, "", "h1:9092", ""},
		{"named SSL", twoListeners, "SSL", "h1:9093", ""},
		{"named case-insensitive", twoListeners, "ssl", "h1:9093", ""},
		{"named missing", twoListeners, "SASL_SSL", "", `zkdata: broker 7: no listener "SASL_SSL" (available: PLAINTEXT, SSL)`},
		{"ssl only default", sslOnly, "", "", `zkdata: broker 7: no PLAINTEXT listener and no host/port (available: SSL, SASL_SSL)`},
		{"ssl only named", sslOnly, "SASL_SSL", "h2:9094", ""},
		{"default by security protocol", internal, "", "int:9092", ""},
		{"named external", internal, "EXTERNAL", "ext:9093", ""},
		{"ipv6 default", ipv6, "", "[::1]:9092", ""},
		{"ipv6 bare named", ipv6, "SSL", "[::2]:9093", ""},
		{"legacy host before protocol lookup", legacyOther, "", "legacy:9092", ""},
	}
	for _, tt := range tests {
		b, err := ParseBroker(7, []byte(tt.data))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got, err := b.Address(tt.listener)
		if tt.wantErr != "" {
			var nl *NoListenerError
			if !errors.Is(err, ErrNoListener) || !errors.As(err, &nl) || err.Error() != tt.wantErr {
				t.Errorf("%s: Address(%q) = %q, %v; want error %q", tt.name, tt.listener, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: Address(%q) = %q, %v; want %q", tt.name, tt.listener, got, err, tt.want)
		}
	}
	// The zero Broker has nothing to offer.
	if _, err := (Broker{ID: 9}).Address(""); !errors.Is(err, ErrNoListener) ||
		!strings.Contains(err.Error(), "available: none") {
		t.Errorf("zero Broker Address = %v", err)
	}
}

func TestEndpointString(t *testing.T) {
	for _, s := range []string{"PLAINTEXT://h:9092", "SSL://[::1]:9093", "X://[fe80::1%eth0]:1"} {
		e, reason := parseEndpoint(s)
		if reason != "" || e.String() != s {
			t.Errorf("parseEndpoint(%q) = %+v (%s), String %q", s, e, reason, e.String())
		}
	}
}

func TestParseIDs(t *testing.T) {
	tests := []struct {
		in      string
		want    int32
		wantErr string
	}{
		{"0", 0, ""},
		{"1001", 1001, ""},
		{"2147483647", 2147483647, ""},
		{"2147483648", 0, "out of range"},
		{"-1", 0, "negative"},
		{"+1", 0, "not a decimal"},
		{"01", 0, "leading zero"},
		{"", 0, "empty"},
		{" 1", 0, "not a decimal"},
	}
	for _, tt := range tests {
		for name, f := range map[string]func(string) (int32, error){"broker id": ParseBrokerID, "partition id": ParsePartitionID} {
			got, err := f(tt.in)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Errorf("%s %q = %d, %v; want %d", name, tt.in, got, err, tt.want)
				}
				continue
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.wantErr) ||
				!strings.Contains(err.Error(), name) {
				t.Errorf("%s %q = %v, want error containing %q", name, tt.in, err, tt.wantErr)
			}
		}
	}
}

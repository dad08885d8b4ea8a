package ops

import "testing"

func TestMemberHostAndClientID(t *testing.T) {
	for _, tc := range []struct {
		group, id, reg, host, client string
	}{
		{"g", "g_web-1.example-1733011200000-3f2a9c1b", `{"version":1}`, "web-1.example", "-"},
		{"g", "g_host-abcdef01", "", "-", "-"},       // no ms part: not the JVM shape
		{"g", "g_h-1733011200000-xyz", "", "-", "-"}, // not hex
		{"g", "other_h-1733011200000-3f2a9c1b", "", "-", "-"},
		{"g", "stable-instance", `{"version":1,"host":"10.0.0.7","client_id":"billing"}`, "10.0.0.7", "billing"},
		{"g", "g_h-1-0000000a", `not json`, "h", "-"},
	} {
		if got := MemberHost(tc.group, tc.id, []byte(tc.reg)); got != tc.host {
			t.Errorf("MemberHost(%q, %q) = %q, want %q", tc.group, tc.id, got, tc.host)
		}
		if got := MemberClientID([]byte(tc.reg)); got != tc.client {
			t.Errorf("MemberClientID(%q) = %q, want %q", tc.reg, got, tc.client)
		}
	}
}

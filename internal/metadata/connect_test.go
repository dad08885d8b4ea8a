package metadata

import (
	"errors"
	"slices"
	"testing"
)

func TestParseConnect(t *testing.T) {
	tests := []struct {
		in      string
		servers []string
		chroot  string
		bad     string // the part named in the error; "-" when valid
	}{
		{"h1:2181,h2:2181/chroot", []string{"h1:2181", "h2:2181"}, "/chroot", "-"},
		{"127.0.0.1:2181/kafka/a", []string{"127.0.0.1:2181"}, "/kafka/a", "-"},
		{"zk", []string{"zk"}, "", "-"},
		{"zk:2181/", []string{"zk:2181"}, "", "-"},
		{"[::1]:2181", []string{"[::1]:2181"}, "", "-"},
		{"", nil, "", ""},
		{"/kafka", nil, "", ""},
		{"h1:2181,,h2", nil, "", ""},
		{"h1:0", nil, "", "h1:0"},
		{"h1:99999", nil, "", "h1:99999"},
		{"h1:x", nil, "", "h1:x"},
		{":2181", nil, "", ":2181"},
		{"h1/kafka/", nil, "", "/kafka/"},
		{"h1//kafka", nil, "", "//kafka"},
		{"h1/a/../b", nil, "", "/a/../b"},
		{"h1 :2181", nil, "", ""},
	}
	for _, tt := range tests {
		servers, chroot, err := parseConnect(tt.in)
		if tt.bad == "-" {
			if err != nil || !slices.Equal(servers, tt.servers) || chroot != tt.chroot {
				t.Errorf("parseConnect(%q) = %q, %q, %v; want %q, %q", tt.in, servers, chroot, err, tt.servers, tt.chroot)
			}
			continue
		}
		var ce *ConnectError
		if !errors.As(err, &ce) || !errors.Is(err, ErrConfig) {
			t.Errorf("parseConnect(%q) = %v; want a *ConnectError", tt.in, err)
			continue
		}
		if tt.bad != "" && ce.Part != tt.bad {
			t.Errorf("parseConnect(%q) names %q, want %q (%v)", tt.in, ce.Part, tt.bad, err)
		}
	}
}

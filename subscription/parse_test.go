package subscription

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		spec     string
		pattern  Pattern
		topics   []string
		expr     string
		internal bool
	}{
		{spec: "a,b", pattern: StaticPattern, topics: []string{"a", "b"}},
		{spec: " b , a ,b ", pattern: StaticPattern, topics: []string{"a", "b"}},
		{spec: "orders", pattern: StaticPattern, topics: []string{"orders"}},
		{spec: "static:a,b", pattern: StaticPattern, topics: []string{"a", "b"}},
		{spec: " STATIC : a", pattern: StaticPattern, topics: []string{"a"}},
		{spec: "whitelist:orders.*", pattern: WhiteList, expr: "orders.*"},
		{spec: "white_list:a,b", pattern: WhiteList, expr: "a|b"},
		{spec: "Whitelist: \"a.*\"", pattern: WhiteList, expr: "a.*"},
		{spec: "whitelist:(?:x|y):z", pattern: WhiteList, expr: "(?:x|y):z"},
		{spec: "blacklist:test.*", pattern: BlackList, expr: "test.*"},
		{spec: "black_list:test.*", pattern: BlackList, expr: "test.*"},
		{spec: "whitelist+internal:.*", pattern: WhiteList, expr: ".*", internal: true},
		{spec: "blacklist+INTERNAL:x", pattern: BlackList, expr: "x", internal: true},
	}
	for _, tt := range tests {
		s, err := Parse(tt.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.spec, err)
			continue
		}
		if s.Pattern() != tt.pattern || s.Expression() != tt.expr || s.IncludesInternal() != tt.internal ||
			strings.Join(s.StaticTopics(), ",") != strings.Join(tt.topics, ",") {
			t.Errorf("Parse(%q) = %v, want pattern %q topics %q expr %q internal %v",
				tt.spec, s, tt.pattern, tt.topics, tt.expr, tt.internal)
		}
		back, err := Parse(s.String())
		if err != nil || !back.Equal(s) {
			t.Errorf("Parse(%q.String()) = %v, %v; want %v", tt.spec, back, err, s)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		spec, want string
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"a,,b", "empty name"},
		{"a,b,", "empty name"},
		{"static:", "empty name"},
		{"regex:a.*", `unknown kind "regex"`},
		{"a b", `"a b"`},
		{"whitelist:", "empty"},
		{"whitelist:a[", `"a["`},
		{"blacklist:(", `"("`},
		{"static+internal:a", "only to wildcards"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.spec)
		if s != nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want ErrConfig containing %q", tt.spec, s, err, tt.want)
		}
	}
}

func TestFromRegistration(t *testing.T) {
	tests := []struct {
		pattern string
		sub     map[string]int
		want    string // String() of the result
	}{
		{"static", map[string]int{"b": 1, "a": 3}, "static:a,b"},
		{"static", map[string]int{"__consumer_offsets": 1}, "static:__consumer_offsets"},
		{"white_list", map[string]int{"a|b": 1}, "whitelist:a|b"},
		{"black_list", map[string]int{"test.*": 2}, "blacklist:test.*"},
		// Written by the JVM after normalisation; not normalised again.
		{"white_list", map[string]int{"\tx": 1}, "whitelist:\tx"},
	}
	for _, tt := range tests {
		s, err := FromRegistration(tt.pattern, tt.sub)
		if err != nil {
			t.Errorf("FromRegistration(%q, %v): %v", tt.pattern, tt.sub, err)
			continue
		}
		if s.String() != tt.want {
			t.Errorf("FromRegistration(%q, %v) = %q, want %q", tt.pattern, tt.sub, s, tt.want)
		}
	}
}

func TestFromRegistrationErrors(t *testing.T) {
	tests := []struct {
		pattern string
		sub     map[string]int
		want    string
	}{
		{"static", nil, "no topics"},
		{"static", map[string]int{"ok": 1, "b/d": 1, "z z": 1}, `"b/d"`},
		{"white_list", nil, "0 expressions"},
		{"white_list", map[string]int{"a": 1, "b": 1}, "2 expressions"},
		{"black_list", map[string]int{"(": 1}, `"("`},
		{"black_list", map[string]int{"": 1}, "empty"},
		{"whitelist", map[string]int{"a": 1}, `pattern "whitelist"`},
		{"", map[string]int{"a": 1}, `pattern ""`},
	}
	for _, tt := range tests {
		s, err := FromRegistration(tt.pattern, tt.sub)
		if s != nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("FromRegistration(%q, %v) = %v, %v; want ErrConfig containing %q",
				tt.pattern, tt.sub, s, err, tt.want)
		}
	}
}

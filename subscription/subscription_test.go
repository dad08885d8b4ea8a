package subscription

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidateTopic(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string // substring; "" means valid
	}{
		{"orders", ""},
		{"a.b_c-D9", ""},
		{"__consumer_offsets", ""},
		{"...", ""},
		{strings.Repeat("x", 249), ""},
		{"", "empty name"},
		{".", "reserved"},
		{"..", "reserved"},
		{strings.Repeat("x", 250), "250 characters"},
		{"a b", `' ' at byte 1`},
		{"a/b", `'/' at byte 1`},
		{"a:b", `':' at byte 1`},
		{"é", "at byte 0"},
	}
	for _, tt := range tests {
		err := ValidateTopic(tt.name)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("ValidateTopic(%q) = %v, want nil", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ValidateTopic(%q) = %v, want ErrConfig containing %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestStatic(t *testing.T) {
	s, err := Static("b", "a", "b", "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.StaticTopics(), []string{"__consumer_offsets", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("StaticTopics = %q, want %q", got, want)
	}
	if s.Pattern() != StaticPattern || s.Expression() != "" || s.IncludesInternal() {
		t.Errorf("Pattern/Expression/IncludesInternal = %q/%q/%v", s.Pattern(), s.Expression(), s.IncludesInternal())
	}
	// StaticTopics is a copy.
	s.StaticTopics()[0] = "zzz"
	if s.StaticTopics()[0] != "__consumer_offsets" {
		t.Error("StaticTopics exposed internal state")
	}
	for topic, want := range map[string]bool{
		"a": true, "b": true, "__consumer_offsets": true, "c": false, "": false, "a ": false,
	} {
		if got := s.Match(topic); got != want {
			t.Errorf("Match(%q) = %v, want %v", topic, got, want)
		}
	}
	if s.IncludeInternal() != s {
		t.Error("IncludeInternal on static should return the receiver")
	}
	if got, want := s.String(), "static:__consumer_offsets,a,b"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func TestStaticErrors(t *testing.T) {
	tests := []struct {
		topics []string
		want   string
	}{
		{nil, "no topics"},
		{[]string{"ok", "bad topic"}, `"bad topic"`},
		{[]string{""}, "empty name"},
		{[]string{".."}, `".."`},
	}
	for _, tt := range tests {
		s, err := Static(tt.topics...)
		if s != nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Static(%q) = %v, %v; want ErrConfig containing %q", tt.topics, s, err, tt.want)
		}
	}
}

func TestWildcardNormalisation(t *testing.T) {
	tests := []struct {
		raw, want string
	}{
		{"orders.*", "orders.*"},
		{"  a , b  ", "a|b"},
		{"a,b,c", "a|b|c"},
		{`"orders.*"`, "orders.*"},
		{`'"x"'`, "x"},
		{"\t\"a b\"\n", "ab"},
		{`a"b`, `a"b`},
	}
	for _, tt := range tests {
		for _, ctor := range []func(string) (*Subscription, error){Whitelist, Blacklist} {
			s, err := ctor(tt.raw)
			if err != nil {
				t.Errorf("%q: %v", tt.raw, err)
				continue
			}
			if s.Expression() != tt.want {
				t.Errorf("Expression(%q) = %q, want %q", tt.raw, s.Expression(), tt.want)
			}
		}
	}
}

func TestWildcardErrors(t *testing.T) {
	tests := []struct {
		expr, want string
	}{
		{"", "empty"},
		{` "" `, "empty"},
		{"a[", `"a["`},
		{"a)|(b", `"a)|(b"`},
		{`(a)\1`, `\1`},
		{"(?=x)", `"(?=x)"`},
	}
	for _, tt := range tests {
		for _, ctor := range []func(string) (*Subscription, error){Whitelist, Blacklist} {
			s, err := ctor(tt.expr)
			if s != nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("(%q) = %v, %v; want ErrConfig containing %q", tt.expr, s, err, tt.want)
			}
		}
	}
}

func TestMatch(t *testing.T) {
	mustW := func(e string) *Subscription {
		s, err := Whitelist(e)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mustB := func(e string) *Subscription {
		s, err := Blacklist(e)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name  string
		s     *Subscription
		topic string
		want  bool
	}{
		{"whole name prefix", mustW("orders"), "orders-eu", false},
		{"whole name suffix", mustW("eu"), "orders-eu", false},
		{"whole name exact", mustW("orders"), "orders", true},
		{"star", mustW("orders.*"), "orders-eu", true},
		{"comma list", mustW("a,b"), "b", true},
		{"comma list no partial", mustW("a,b"), "ab", false},
		{"alternation binds inside anchors", mustW("a|b.*"), "b1", true},
		{"alternation whole name", mustW("a|b.*"), "ab", false},
		{"alternation no escape from anchors", mustW("a|b"), "xa", false},
		{"internal excluded", mustW(".*"), "__consumer_offsets", false},
		{"internal included", mustW(".*").IncludeInternal(), "__consumer_offsets", true},
		{"internal excluded even if named", mustW("__consumer_offsets"), "__consumer_offsets", false},
		{"single underscore not internal", mustW(".*"), "_schemas", true},
		{"invalid topic name", mustW(".*"), "a b", false},
		{"empty topic name", mustW(".*"), "", false},
		{"multiline flag cannot unanchor", mustW("(?m)a"), "a", true},
		{"dollar is end of text", mustW("a"), "a\n", false},
		{"blacklist excludes", mustB("test.*"), "test-1", false},
		{"blacklist includes", mustB("test.*"), "orders", true},
		{"blacklist whole name", mustB("test"), "test-1", true},
		{"blacklist internal excluded", mustB("orders"), "__consumer_offsets", false},
		{"blacklist internal included", mustB("orders").IncludeInternal(), "__consumer_offsets", true},
		{"blacklist empty topic", mustB("x"), "", false},
		{"nil", nil, "a", false},
	}
	for _, tt := range tests {
		if got := tt.s.Match(tt.topic); got != tt.want {
			t.Errorf("%s: %v.Match(%q) = %v, want %v", tt.name, tt.s, tt.topic, got, tt.want)
		}
	}
}

func TestFilter(t *testing.T) {
	s, err := Whitelist("orders.*,payments")
	if err != nil {
		t.Fatal(err)
	}
	in := []string{"payments", "orders-b", "__consumer_offsets", "orders-a", "payments", "other", "orders-b"}
	orig := slices.Clone(in)
	got := s.Filter(in)
	if want := []string{"orders-a", "orders-b", "payments"}; !slices.Equal(got, want) {
		t.Errorf("Filter = %q, want %q", got, want)
	}
	if !slices.Equal(in, orig) {
		t.Errorf("Filter modified its input: %q", in)
	}
	if got := s.Filter(nil); got == nil || len(got) != 0 {
		t.Errorf("Filter(nil) = %#v, want empty non-nil", got)
	}
}

func TestIncludeInternalCopies(t *testing.T) {
	w, err := Whitelist(".*")
	if err != nil {
		t.Fatal(err)
	}
	wi := w.IncludeInternal()
	if w.IncludesInternal() || !wi.IncludesInternal() {
		t.Errorf("IncludesInternal: original %v, copy %v", w.IncludesInternal(), wi.IncludesInternal())
	}
	if w.Equal(wi) {
		t.Error("include-internal copy should not equal the original")
	}
	if got, want := wi.String(), "whitelist+internal:.*"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if (*Subscription)(nil).IncludeInternal() != nil {
		t.Error("nil.IncludeInternal() != nil")
	}
}

func TestEqual(t *testing.T) {
	a1, _ := Static("a", "b")
	a2, _ := Static("b", "a", "a")
	c, _ := Static("a")
	w1, _ := Whitelist("a, b")
	w2, _ := Whitelist("a|b")
	b1, _ := Blacklist("a|b")
	tests := []struct {
		x, y *Subscription
		want bool
	}{
		{a1, a2, true},
		{a1, c, false},
		{w1, w2, true},
		{w1, b1, false},
		{w1, a1, false},
		{nil, nil, true},
		{a1, nil, false},
		{nil, a1, false},
	}
	for _, tt := range tests {
		if got := tt.x.Equal(tt.y); got != tt.want {
			t.Errorf("%v.Equal(%v) = %v, want %v", tt.x, tt.y, got, tt.want)
		}
	}
}

func TestRegistration(t *testing.T) {
	s, _ := Static("b", "a")
	reg := s.Registration()
	if len(reg) != 2 || reg["a"] != 1 || reg["b"] != 1 {
		t.Errorf("static Registration = %v", reg)
	}
	reg["c"] = 1 // must not affect s
	if s.Match("c") || len(s.Registration()) != 2 {
		t.Error("Registration exposed internal state")
	}
	w, _ := Blacklist(" 'x, y' ")
	if reg := w.Registration(); len(reg) != 1 || reg["x|y"] != 1 {
		t.Errorf("blacklist Registration = %v", reg)
	}
	if (*Subscription)(nil).Registration() != nil {
		t.Error("nil Registration != nil")
	}
}

func TestNilSubscription(t *testing.T) {
	var s *Subscription
	if s.Pattern() != "" || s.Expression() != "" || s.StaticTopics() != nil || s.String() != "<nil>" ||
		s.IncludesInternal() || len(s.Filter([]string{"a"})) != 0 {
		t.Error("nil subscription is not empty")
	}
}

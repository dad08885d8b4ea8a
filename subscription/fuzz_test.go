package subscription

import (
	"slices"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"a,b", "static:a,b", "whitelist:orders.*", "blacklist:'x, y'", "white_list:a)|(b",
		"whitelist+internal:.*", "", ":", "static:", "a,,b", "whitelist:(?i)A", "blacklist:\"\t'x\"",
		"whitelist:\xff", "whitelist:a{1000}{1000}",
	} {
		f.Add(seed, "__consumer_offsets")
	}
	f.Fuzz(func(t *testing.T, spec, topic string) {
		s, err := Parse(spec)
		if err != nil {
			if s != nil {
				t.Fatalf("Parse(%q) returned both %v and %v", spec, s, err)
			}
			return
		}
		// Registration round-trips (the include-internal flag is not registered).
		back, err := FromRegistration(string(s.Pattern()), s.Registration())
		if err != nil {
			t.Fatalf("FromRegistration(Registration of %q): %v", spec, err)
		}
		if s.IncludesInternal() {
			back = back.IncludeInternal()
		}
		if !back.Equal(s) {
			t.Fatalf("Registration round trip of %q: got %v, want %v", spec, back, s)
		}
		// String round-trips whenever the expression is stable under
		// Kafka's single-pass normalisation.
		if s.Pattern() == StaticPattern || normalise(s.Expression()) == s.Expression() {
			again, err := Parse(s.String())
			if err != nil || !again.Equal(s) {
				t.Fatalf("Parse(%q.String() = %q) = %v, %v", spec, s.String(), again, err)
			}
		}
		got := s.Filter([]string{topic, topic, "a", "b"})
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("Filter result %q not sorted and unique", got)
		}
		if s.Match(topic) && ValidateTopic(topic) != nil {
			t.Fatalf("%v matched invalid topic %q", s, topic)
		}
		if IsInternal(topic) && s.Pattern() != StaticPattern && !s.IncludesInternal() && s.Match(topic) {
			t.Fatalf("%v matched internal topic %q", s, topic)
		}
	})
}

func FuzzFromRegistration(f *testing.F) {
	f.Add("static", "a", "b", 1)
	f.Add("white_list", "a.*", "", 1)
	f.Add("black_list", "(", "", 2)
	f.Add("other", "a", "", 0)
	f.Fuzz(func(t *testing.T, pattern, k1, k2 string, n int) {
		sub := map[string]int{k1: n}
		if k2 != "" {
			sub[k2] = n
		}
		s, err := FromRegistration(pattern, sub)
		if err != nil {
			return
		}
		back, err := FromRegistration(string(s.Pattern()), s.Registration())
		if err != nil || !back.Equal(s) {
			t.Fatalf("round trip of %q %v: %v, %v", pattern, sub, back, err)
		}
	})
}

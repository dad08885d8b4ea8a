package subscription

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Subscription is the set of topics a consumer group member consumes. Build
// one with Static, Whitelist, Blacklist, Parse or FromRegistration. It is
// immutable and safe for concurrent use; its methods never block. A nil
// *Subscription matches nothing.
type Subscription struct {
	pattern  Pattern
	topics   []string            // static only: sorted, unique
	set      map[string]struct{} // static only: the same topics
	expr     string              // wildcard only: normalised expression
	re       *regexp.Regexp      // wildcard only: expr anchored at both ends
	internal bool                // wildcard only: match "__" topics too
}

// Static returns a subscription to exactly the named topics, deduplicated and
// sorted. Every name must satisfy ValidateTopic and at least one is required;
// otherwise the error wraps ErrConfig and names the bad topic. Internal
// topics named explicitly are included. It does not block.
func Static(topics ...string) (*Subscription, error) {
	if len(topics) == 0 {
		return nil, fmt.Errorf("%w: static subscription with no topics", ErrConfig)
	}
	set := make(map[string]struct{}, len(topics))
	for _, t := range topics {
		if err := ValidateTopic(t); err != nil {
			return nil, err
		}
		set[t] = struct{}{}
	}
	sorted := make([]string, 0, len(set))
	for t := range set {
		sorted = append(sorted, t)
	}
	slices.Sort(sorted)
	return &Subscription{pattern: StaticPattern, topics: sorted, set: set}, nil
}

// Whitelist returns a subscription to every non-internal topic whose whole
// name matches expr. The expression is first normalised as Kafka's
// TopicFilter does (trimmed, ',' replaced by '|', spaces removed, surrounding
// quotes stripped); an empty result or an expression Go's regexp package
// rejects gives an error wrapping ErrConfig that quotes the expression.
// It does not block.
func Whitelist(expr string) (*Subscription, error) {
	return wildcard(WhiteList, normalise(expr), expr)
}

// Blacklist returns a subscription to every non-internal topic whose whole
// name does NOT match expr. Normalisation and errors are as for Whitelist.
// It does not block.
func Blacklist(expr string) (*Subscription, error) {
	return wildcard(BlackList, normalise(expr), expr)
}

// wildcard builds a white_list or black_list subscription from an already
// normalised expression; raw is the caller's text, used in error messages.
func wildcard(p Pattern, expr, raw string) (*Subscription, error) {
	if expr == "" {
		return nil, fmt.Errorf("%w: %s expression %q is empty", ErrConfig, p, raw)
	}
	// Compile the bare expression first: "a)|(b" must be rejected, not
	// silently become a valid pattern once wrapped in a group.
	if _, err := regexp.Compile(expr); err != nil {
		return nil, fmt.Errorf("%w: %s expression %q: %v", ErrConfig, p, expr, err)
	}
	re, err := regexp.Compile(`\A(?:` + expr + `)\z`)
	if err != nil {
		return nil, fmt.Errorf("%w: %s expression %q: %v", ErrConfig, p, expr, err)
	}
	return &Subscription{pattern: p, expr: expr, re: re}, nil
}

// IncludeInternal returns a copy of s whose wildcard also matches internal
// topics (names beginning with "__"), like Kafka's
// exclude.internal.topics=false. A static subscription already includes the
// internal topics it names, so it is returned unchanged. Nil returns nil.
func (s *Subscription) IncludeInternal() *Subscription {
	if s == nil || s.pattern == StaticPattern {
		return s
	}
	c := *s
	c.internal = true
	return &c
}

// IncludesInternal reports whether a wildcard subscription matches internal
// topics (see IncludeInternal). It is false for static subscriptions.
func (s *Subscription) IncludesInternal() bool {
	return s != nil && s.internal
}

// Pattern returns the registration pattern of s, or "" for nil.
func (s *Subscription) Pattern() Pattern {
	if s == nil {
		return ""
	}
	return s.pattern
}

// Match reports whether s selects topic. Names that fail ValidateTopic never
// match. Internal topics match a wildcard only after IncludeInternal, and a
// static subscription only if it names them.
func (s *Subscription) Match(topic string) bool {
	if s == nil || ValidateTopic(topic) != nil {
		return false
	}
	if s.pattern == StaticPattern {
		_, ok := s.set[topic]
		return ok
	}
	if !s.internal && IsInternal(topic) {
		return false
	}
	return s.re.MatchString(topic) == (s.pattern == WhiteList)
}

// Filter returns the topics in topics that s matches, sorted and without
// duplicates. The input is not modified. The result is never nil.
func (s *Subscription) Filter(topics []string) []string {
	out := make([]string, 0, len(topics))
	for _, t := range topics {
		if s.Match(t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Expression returns the normalised regular expression of a wildcard
// subscription (without the anchors added for whole-name matching), or ""
// for a static one.
func (s *Subscription) Expression() string {
	if s == nil {
		return ""
	}
	return s.expr
}

// StaticTopics returns a fresh sorted copy of the topics of a static
// subscription, or nil for a wildcard one.
func (s *Subscription) StaticTopics() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.topics)
}

// Registration returns a fresh copy of the "subscription" object to write in
// the member's ids node: each topic mapped to one stream for a static
// subscription, the expression mapped to one stream for a wildcard. The
// include-internal flag is not part of the registration. Nil returns nil.
func (s *Subscription) Registration() map[string]int {
	if s == nil {
		return nil
	}
	if s.pattern != StaticPattern {
		return map[string]int{s.expr: 1}
	}
	m := make(map[string]int, len(s.topics))
	for _, t := range s.topics {
		m[t] = 1
	}
	return m
}

// String returns the specification form Parse accepts: "static:a,b",
// "whitelist:<expr>" or "blacklist:<expr>", with "+internal" after the kind
// when IncludeInternal was applied. Nil gives "<nil>".
func (s *Subscription) String() string {
	if s == nil {
		return "<nil>"
	}
	var kind string
	switch s.pattern {
	case StaticPattern:
		return kindStatic + ":" + strings.Join(s.topics, ",")
	case WhiteList:
		kind = kindWhitelist
	default:
		kind = kindBlacklist
	}
	if s.internal {
		kind += internalSuffix
	}
	return kind + ":" + s.expr
}

// Equal reports whether s and o select topics by the same rule: the same
// pattern and either the same topic set or the same normalised expression and
// include-internal flag. Two nils are equal; nil never equals non-nil.
func (s *Subscription) Equal(o *Subscription) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.pattern == o.pattern && s.expr == o.expr && s.internal == o.internal &&
		slices.Equal(s.topics, o.topics)
}

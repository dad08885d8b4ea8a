package subscription

import (
	"fmt"
	"slices"
	"strings"
)

// Specification kinds accepted by Parse and produced by String.
const (
	kindStatic     = "static"
	kindWhitelist  = "whitelist"
	kindBlacklist  = "blacklist"
	internalSuffix = "+internal"
)

// Parse reads a subscription specification from configuration or a command
// line:
//
//	static:a,b          the topics a and b
//	a,b                 the same (no kind means static)
//	whitelist:regex     topics matching regex (normalised as by Whitelist)
//	blacklist:regex     topics not matching regex
//	whitelist+internal:regex, blacklist+internal:regex
//	                    the same, with IncludeInternal applied
//
// The kind is case-insensitive; "white_list" and "black_list" are accepted as
// synonyms. Spaces around the specification, the kind and each static topic
// are ignored. Since topic names cannot contain ':', a specification with a
// ':' must start with a known kind. Errors wrap ErrConfig and quote the
// offending part. It is a pure function, safe for concurrent use, and does
// not block.
func Parse(spec string) (*Subscription, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("%w: empty subscription specification", ErrConfig)
	}
	kind, rest, found := strings.Cut(spec, ":")
	if !found {
		return staticList(spec)
	}
	kind = strings.ToLower(strings.TrimSpace(kind))
	internal := false
	if k, ok := strings.CutSuffix(kind, internalSuffix); ok {
		kind, internal = strings.TrimSpace(k), true
	}
	var (
		s   *Subscription
		err error
	)
	switch kind {
	case kindStatic:
		if internal {
			return nil, fmt.Errorf("%w: specification %q: %q applies only to wildcards",
				ErrConfig, spec, internalSuffix)
		}
		return staticList(rest)
	case kindWhitelist, string(WhiteList):
		s, err = Whitelist(rest)
	case kindBlacklist, string(BlackList):
		s, err = Blacklist(rest)
	default:
		return nil, fmt.Errorf("%w: specification %q: unknown kind %q (want static, whitelist or blacklist)",
			ErrConfig, spec, kind)
	}
	if err != nil {
		return nil, err
	}
	if internal {
		s = s.IncludeInternal()
	}
	return s, nil
}

// staticList parses a comma-separated list of topics.
func staticList(list string) (*Subscription, error) {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return Static(parts...)
}

// FromRegistration rebuilds a subscription from the "pattern" and
// "subscription" fields of another member's ids node; it is the inverse of
// Registration. Stream counts are ignored (read them from the registration
// itself). A wildcard registration must hold exactly one expression, which is
// used as written (the writer already normalised it). Errors wrap ErrConfig.
// The result never includes internal topics beyond those a static list names.
// It is a pure function, safe for concurrent use, and does not block.
func FromRegistration(pattern string, sub map[string]int) (*Subscription, error) {
	switch Pattern(pattern) {
	case StaticPattern:
		topics := make([]string, 0, len(sub))
		for t := range sub {
			topics = append(topics, t)
		}
		slices.Sort(topics) // report the same bad topic every time
		return Static(topics...)
	case WhiteList, BlackList:
		if len(sub) != 1 {
			return nil, fmt.Errorf("%w: %s registration has %d expressions, want 1",
				ErrConfig, pattern, len(sub))
		}
		for expr := range sub {
			return wildcard(Pattern(pattern), expr, expr)
		}
	}
	return nil, fmt.Errorf("%w: registration pattern %q (want %q, %q or %q)",
		ErrConfig, pattern, StaticPattern, WhiteList, BlackList)
}

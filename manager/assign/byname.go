package assign

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zkgroup/zkgroup"
)

// Strategy names accepted by ByName.
const (
	NameRange       = "range"
	NameRoundRobin  = "roundrobin"
	NameLeaderAware = "leader-aware"
	NameSticky      = "sticky"
	NameBalanced    = "balanced"
	// DefaultName is the strategy the project uses when none is configured.
	DefaultName = NameBalanced
)

// ErrConfig is wrapped by the error ByName returns for a name it does not
// know (an *UnknownStrategyError, for errors.As). It is zkgroup.ErrConfig,
// the module's one sentinel for an invalid configuration or argument
// (manager.ErrConfig is the same value). Read-only; safe for concurrent
// use.
var ErrConfig = zkgroup.ErrConfig

// UnknownStrategyError reports a strategy name ByName does not know. It
// unwraps to ErrConfig.
type UnknownStrategyError struct {
	// Name is the offending value as given.
	Name string
}

// Error names the offending value and lists the valid names.
func (e *UnknownStrategyError) Error() string {
	return fmt.Sprintf("assign: unknown strategy %q (valid: %s)", e.Name,
		strings.Join(Names(), ", "))
}

// Unwrap returns ErrConfig.
func (e *UnknownStrategyError) Unwrap() error { return ErrConfig }

// ByName returns the strategy of this package named name (exact,
// case-sensitive match of one of Names()); its Name() is name. For any other
// name it returns a nil Strategy and an *UnknownStrategyError wrapping
// ErrConfig. ByName never blocks and is safe for concurrent use.
func ByName(name string) (Strategy, error) {
	switch name {
	case NameRange:
		return Range(), nil
	case NameRoundRobin:
		return RoundRobin(), nil
	case NameLeaderAware:
		return LeaderAware(), nil
	case NameSticky:
		return Sticky(), nil
	case NameBalanced:
		return Balanced(), nil
	}
	return nil, &UnknownStrategyError{Name: name}
}

// Names returns the valid strategy names in a fixed order, the default
// first, as a new slice the caller may modify. It never blocks and is safe
// for concurrent use.
func Names() []string {
	return []string{NameBalanced, NameRange, NameRoundRobin, NameLeaderAware, NameSticky}
}

// ValidName reports why name cannot name a Strategy ("" when it can): it
// must be non-empty, at most 64 bytes of valid UTF-8, without spaces or
// control characters. It never blocks and is safe for concurrent use.
func ValidName(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > 64:
		return "longer than 64 bytes"
	case !utf8.ValidString(name):
		return "not valid UTF-8"
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Sprintf("contains %q", r)
		}
	}
	return ""
}

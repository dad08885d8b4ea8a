package config

import (
	"fmt"

	"github.com/zkgroup/zkgroup"
)

// ErrConfig is wrapped by every error about a bad configuration: a bad
// file, an unknown key, a value that does not parse or does not validate.
// It is zkgroup.ErrConfig, the module's one sentinel for an invalid
// configuration or argument (manager.ErrConfig is the same value).
// Read-only; safe for concurrent use.
var ErrConfig = zkgroup.ErrConfig

// FieldError reports one bad field. Field is its dotted YAML path
// ("partition.max_unacked"), Value the offending value as text, Origin
// where it was set ("zkgroup.yaml line 7", "env ZKGROUP_GROUP", "flag
// --group" or "default"). It unwraps to ErrConfig and Err. A plain value,
// safe for concurrent reads.
type FieldError struct {
	Field  string
	Value  string
	Origin string
	Reason string
	Err    error
}

// maxShownValue bounds how much of a value Error quotes.
const maxShownValue = 128

// Error formats the error as
// `config: <field>: <reason> (value "<v>", from <origin>)`; a value
// longer than 128 bytes is cut, with its length.
func (e *FieldError) Error() string {
	msg := fmt.Sprintf("config: %s: %s", e.Field, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	switch {
	case e.Origin != "" && len(e.Value) > maxShownValue:
		msg += fmt.Sprintf(" (value %q... of %d bytes, from %s)", e.Value[:maxShownValue], len(e.Value), e.Origin)
	case e.Origin != "" && e.Value != "":
		msg += fmt.Sprintf(" (value %q, from %s)", e.Value, e.Origin)
	case e.Origin != "":
		msg += fmt.Sprintf(" (from %s)", e.Origin)
	}
	return msg
}

// Unwrap returns ErrConfig and the cause.
func (e *FieldError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrConfig}
	}
	return []error{ErrConfig, e.Err}
}

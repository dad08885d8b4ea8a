package config

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error about a bad configuration: a bad
// file, an unknown key, a value that does not parse or does not validate.
// Read-only; safe for concurrent use.
var ErrInvalid = errors.New("config: invalid")

// FieldError reports one bad field. Field is its dotted YAML path
// ("partition.max_unacked"), Value the offending value as text, Origin
// where it was set ("zkgroup.yaml line 7", "env ZKGROUP_GROUP", "flag
// --group" or "default"). It unwraps to ErrInvalid and Err. A plain value,
// safe for concurrent reads.
type FieldError struct {
	Field  string
	Value  string
	Origin string
	Reason string
	Err    error
}

// Error formats the error as
// `config: <field>: <reason> (value "<v>", from <origin>)`.
func (e *FieldError) Error() string {
	msg := fmt.Sprintf("config: %s: %s", e.Field, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	switch {
	case e.Origin != "" && e.Value != "":
		msg += fmt.Sprintf(" (value %q, from %s)", e.Value, e.Origin)
	case e.Origin != "":
		msg += fmt.Sprintf(" (from %s)", e.Origin)
	}
	return msg
}

// Unwrap returns ErrInvalid and the cause.
func (e *FieldError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.Err}
}

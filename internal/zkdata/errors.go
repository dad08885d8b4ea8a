package zkdata

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors, read-only and safe for concurrent use; test with
// errors.Is.
var (
	// ErrMalformed is wrapped by every error about node data that cannot be
	// decoded or a value that cannot be encoded.
	ErrMalformed = errors.New("zkdata: malformed")
	// ErrNoListener is wrapped by the error Broker.Address returns when the
	// broker has no usable endpoint for the requested listener.
	ErrNoListener = errors.New("zkdata: no such listener")
)

// maxValue bounds how much of an offending value an error message quotes.
const maxValue = 64

// MalformedError describes node data that could not be decoded, or a value
// that could not be encoded. It unwraps to ErrMalformed and, when set, Err.
// It is a plain value, safe for concurrent reads.
type MalformedError struct {
	Node   string // the node, e.g. `broker 3` or `topic "orders"`
	Field  string // the field, e.g. "endpoints[1]"; "" for the node as a whole
	Value  string // the offending value (clipped), quoted in Error; "" if none
	Reason string // what is wrong, e.g. `no "://"`
	Err    error  // the underlying decoding error, or nil
}

// Error formats the error as "zkdata: <node>: <field> <"value">: <reason>",
// leaving out the field and value when they are empty.
func (e *MalformedError) Error() string {
	var b strings.Builder
	b.WriteString("zkdata: ")
	b.WriteString(e.Node)
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		if e.Value != "" {
			b.WriteByte(' ')
		}
	}
	if e.Value != "" {
		b.WriteString(strconv.Quote(e.Value))
	}
	if e.Field != "" || e.Value != "" {
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns ErrMalformed and the underlying error, if any.
func (e *MalformedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrMalformed}
	}
	return []error{ErrMalformed, e.Err}
}

// malformed builds a *MalformedError, clipping value for the message.
func malformed(node, field, value, reason string) *MalformedError {
	return &MalformedError{Node: node, Field: field, Value: clip(value), Reason: reason}
}

// clip shortens s to at most maxValue bytes, marking the cut with "...".
func clip(s string) string {
	if len(s) <= maxValue {
		return s
	}
	return s[:maxValue] + "..."
}

// NoListenerError is returned by Broker.Address when the broker has no
// endpoint for the requested listener. It unwraps to ErrNoListener and is a
// plain value, safe for concurrent reads.
type NoListenerError struct {
	BrokerID  int32
	Listener  string   // as requested; "" means the default (plaintext) choice
	Available []string // listener names the broker does have, in its order
}

// Error names the broker, the listener and the available listeners.
func (e *NoListenerError) Error() string {
	what := "no listener " + strconv.Quote(e.Listener)
	if e.Listener == "" {
		what = "no PLAINTEXT listener and no host/port"
	}
	avail := "none"
	if len(e.Available) > 0 {
		avail = strings.Join(e.Available, ", ")
	}
	return "zkdata: broker " + strconv.FormatInt(int64(e.BrokerID), 10) + ": " + what +
		" (available: " + avail + ")"
}

// Unwrap returns ErrNoListener.
func (e *NoListenerError) Unwrap() error { return ErrNoListener }

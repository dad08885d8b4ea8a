package zkdata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// decodeObject unmarshals data, which must be a JSON object, into v and
// turns decoding failures into *MalformedError values naming node and field.
func decodeObject(node string, data []byte, v any) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return malformed(node, "", "", "empty data")
	}
	if trimmed[0] != '{' {
		return malformed(node, "", string(data), "not a JSON object")
	}
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		e := malformed(node, "", "", fmt.Sprintf("invalid JSON at byte %d: %v", syn.Offset, syn))
		e.Err = err
		return e
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(object)"
		}
		e := malformed(node, field, "", fmt.Sprintf("JSON %s where %s expected", typ.Value, typ.Type))
		e.Err = err
		return e
	default:
		e := malformed(node, "", "", err.Error())
		e.Err = err
		return e
	}
}

// parseID parses a canonical non-negative decimal int32 as used for broker
// ids and partition numbers: digits only, no sign, no leading zeros. It
// returns a reason when s is not one.
func parseID(s string) (int32, string) {
	n, reason := parseDigits(s, 32, false)
	return int32(n), reason
}

// parseDigits parses s, decimal digits only (no sign), as a non-negative
// integer of bitSize bits, leading zeros allowed or not; it returns a
// reason when s is not one.
func parseDigits(s string, bitSize int, leadingZeros bool) (int64, string) {
	if s == "" {
		return 0, "empty"
	}
	if s[0] == '-' {
		return 0, "negative"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, "not a decimal integer"
		}
	}
	if !leadingZeros && len(s) > 1 && s[0] == '0' {
		return 0, "leading zero"
	}
	n, err := strconv.ParseInt(s, 10, bitSize)
	if err != nil {
		return 0, "out of range"
	}
	return n, ""
}

// ParseBrokerID parses a child name of BrokerIDsPath. Errors wrap
// ErrMalformed. It is pure, safe for concurrent use, and does not block.
func ParseBrokerID(name string) (int32, error) {
	id, reason := parseID(name)
	if reason != "" {
		return 0, malformed("broker id", "", name, reason)
	}
	return id, nil
}

// ParsePartitionID parses a partition number as it appears in paths and in
// the partitions object of a topic node: a canonical non-negative decimal.
// Errors wrap ErrMalformed. It is pure, safe for concurrent use, and does
// not block.
func ParsePartitionID(name string) (int32, error) {
	p, reason := parseID(name)
	if reason != "" {
		return 0, malformed("partition id", "", name, reason)
	}
	return p, nil
}

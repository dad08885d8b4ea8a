package zkdata

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// MemberRegistrationVersion is the version Marshal writes when Version is 0.
const MemberRegistrationVersion = 1

// MemberRegistration is the data of /consumers/<group>/ids/<consumerId>. It
// is a plain value; copies share the Subscription map, so treat it as
// read-only when sharing between goroutines.
type MemberRegistration struct {
	Version int
	// Subscription maps a topic (pattern "static") or the one wildcard
	// expression (patterns "white_list", "black_list") to a stream count.
	Subscription map[string]int
	Pattern      string // "static", "white_list" or "black_list"; not checked here
	Timestamp    int64  // milliseconds since the epoch; 0 when absent
	// Host and ClientID, written by zkgroup for operator tools (describe's
	// HOST and CLIENT-ID); JVM tools ignore them. Empty: left out.
	Host, ClientID string
	// Strategy is the name of the member's assignment strategy
	// (assign.Strategy.Name), written by zkgroup under "zkgroup_strategy"
	// so that members can tell when they would compute different
	// assignments; JVM tools ignore it. Empty: left out when writing, and
	// unknown when read (a JVM consumer or an older zkgroup).
	Strategy string
	// RestartGraceMS is how long, in milliseconds, the group keeps a
	// stopped member's partitions for it (zkgroup's restart grace, under
	// "zkgroup_restart_grace_ms"; 0: none, left out). It matters in the
	// member's restart marker (StaticMemberPath).
	RestartGraceMS int64
	// Assignment is the version of the group's assignment node
	// (AssignmentPath, GroupAssignment) the member computes from, under
	// "zkgroup_assignment"; 0 (left out): none, a JVM consumer or an
	// older zkgroup, which compute from the owner nodes.
	Assignment int
}

type memberOut struct {
	Version      int            `json:"version"`
	Subscription map[string]int `json:"subscription"`
	Pattern      string         `json:"pattern"`
	Timestamp    string         `json:"timestamp"`
	Host         string         `json:"host,omitempty"`
	ClientID     string         `json:"client_id,omitempty"`
	Strategy     string         `json:"zkgroup_strategy,omitempty"`
	RestartGrace int64          `json:"zkgroup_restart_grace_ms,omitempty"`
	Assignment   int            `json:"zkgroup_assignment,omitempty"`
}

type memberIn struct {
	Version      int             `json:"version"`
	Subscription map[string]int  `json:"subscription"`
	Pattern      *string         `json:"pattern"`
	Timestamp    json.RawMessage `json:"timestamp"`
	Strategy     string          `json:"zkgroup_strategy"`
	RestartGrace int64           `json:"zkgroup_restart_grace_ms"`
	Assignment   int             `json:"zkgroup_assignment"`
}

// Marshal encodes m as Kafka's ZooKeeper consumer does:
// {"version":1,"subscription":{...},"pattern":"static","timestamp":"<ms>"},
// with the timestamp as a JSON string (JVM tools reject a number), the
// subscription keys sorted and HTML characters unescaped. Version 0 is
// written as MemberRegistrationVersion. It rejects, with an error wrapping
// ErrMalformed, an empty pattern or subscription, stream counts below 1, a
// negative timestamp and strings that are not valid UTF-8. It is pure, safe
// for concurrent use, and does not block.
func (m MemberRegistration) Marshal() ([]byte, error) {
	const node = "member registration"
	switch {
	case m.Pattern == "":
		return nil, malformed(node, "pattern", "", "empty")
	case !utf8.ValidString(m.Pattern):
		return nil, malformed(node, "pattern", m.Pattern, "invalid UTF-8")
	case len(m.Subscription) == 0:
		return nil, malformed(node, "subscription", "", "empty")
	case m.Timestamp < 0:
		return nil, malformed(node, "timestamp", strconv.FormatInt(m.Timestamp, 10), "negative")
	case !utf8.ValidString(m.Strategy):
		return nil, malformed(node, "zkgroup_strategy", m.Strategy, "invalid UTF-8")
	case m.RestartGraceMS < 0:
		return nil, malformed(node, "zkgroup_restart_grace_ms", strconv.FormatInt(m.RestartGraceMS, 10), "negative")
	case m.Assignment < 0:
		return nil, malformed(node, "zkgroup_assignment", strconv.Itoa(m.Assignment), "negative")
	}
	for k, n := range m.Subscription {
		if !utf8.ValidString(k) {
			return nil, malformed(node, "subscription", k, "invalid UTF-8")
		}
		if n < 1 {
			return nil, malformed(node, "subscription", k, "stream count "+strconv.Itoa(n)+" below 1")
		}
	}
	v := m.Version
	if v == 0 {
		v = MemberRegistrationVersion
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(memberOut{
		Version:      v,
		Subscription: m.Subscription,
		Pattern:      m.Pattern,
		Timestamp:    strconv.FormatInt(m.Timestamp, 10),
		Host:         m.Host,
		ClientID:     m.ClientID,
		Strategy:     m.Strategy,
		RestartGrace: m.RestartGraceMS,
		Assignment:   m.Assignment,
	})
	if err != nil {
		e := malformed(node, "", "", err.Error())
		e.Err = err
		return nil, e
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ParseMemberRegistration decodes the ids node of consumer id. "pattern" and
// "subscription" are required and non-empty; stream counts must be
// non-negative integers. "timestamp" may be a string of decimal digits (as
// the JVM writes it, in milliseconds), a non-negative JSON integer (as
// kazoo-go writes it: in seconds, taken as such below
// secondsTimestampBelow, else as milliseconds), null or absent (0). "zkgroup_strategy", when present and not
// null, must be a string (Strategy; "" when absent). Unknown fields are ignored. Errors wrap
// ErrMalformed and name the member and field. It is pure, safe for
// concurrent use, and does not block.
func ParseMemberRegistration(id string, data []byte) (MemberRegistration, error) {
	node := "member " + strconv.Quote(id)
	var raw memberIn
	if err := decodeObject(node, data, &raw); err != nil {
		return MemberRegistration{}, err
	}
	if raw.Pattern == nil {
		return MemberRegistration{}, malformed(node, "pattern", "", "missing")
	}
	if *raw.Pattern == "" {
		return MemberRegistration{}, malformed(node, "pattern", "", "empty")
	}
	if len(raw.Subscription) == 0 {
		return MemberRegistration{}, malformed(node, "subscription", "", "missing or empty")
	}
	for k, n := range raw.Subscription {
		if n < 0 {
			return MemberRegistration{}, malformed(node, "subscription", k,
				"negative stream count "+strconv.Itoa(n))
		}
	}
	ts, reason := parseTimestamp(raw.Timestamp)
	if reason != "" {
		return MemberRegistration{}, malformed(node, "timestamp", string(raw.Timestamp), reason)
	}
	if len(raw.Timestamp) > 0 && raw.Timestamp[0] != '"' && ts < secondsTimestampBelow {
		ts *= 1000
	}
	return MemberRegistration{
		Version:      raw.Version,
		Subscription: raw.Subscription,
		Pattern:      *raw.Pattern,
		Timestamp:    ts,
		Strategy:     raw.Strategy,
		// A negative grace is none.
		RestartGraceMS: max(raw.RestartGrace, 0),
		Assignment:     max(raw.Assignment, 0),
	}, nil
}

// secondsTimestampBelow: a JSON integer timestamp below it is in seconds
// (kazoo-go writes time.Now().Unix()). As milliseconds it would be before
// March 1973, before any ZooKeeper consumer; as seconds it reaches the
// year 5138.
const secondsTimestampBelow = 100_000_000_000

// parseTimestamp accepts a JSON string of decimal digits, a JSON integer,
// null or nothing, and returns a reason when raw is none of these.
func parseTimestamp(raw json.RawMessage) (int64, string) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, ""
	}
	digits := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &digits); err != nil {
			return 0, "bad string"
		}
	} else if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, "want a string or an integer"
	}
	return parseDigits(digits, 64, true)
}

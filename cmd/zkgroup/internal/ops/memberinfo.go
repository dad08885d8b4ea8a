package ops

import (
	"encoding/json"
	"strings"
)

// memberExtras are optional fields of a member registration beside
// Kafka's own (version, subscription, pattern, timestamp): the JVM tools
// ignore unknown fields.
type memberExtras struct {
	Host     string `json:"host"`
	ClientID string `json:"client_id"`
}

func extras(data []byte) memberExtras {
	var e memberExtras
	if len(data) > 0 {
		_ = json.Unmarshal(data, &e) // a registration that does not parse was reported already
	}
	return e
}

// MemberHost returns the host a member runs on, for describe's HOST
// column (kafka-consumer-groups shows the consumer's host there): the
// registration's "host" field when it has one; else the host part of a
// member id of the JVM consumer's shape "<group>_<host>-<ms>-<uuid8>",
// which is how zkgroup names members without an explicit instance_id;
// else "-". Pure.
func MemberHost(group, id string, registration []byte) string {
	if h := extras(registration).Host; h != "" {
		return h
	}
	rest, ok := strings.CutPrefix(id, group+"_")
	if !ok {
		return "-"
	}
	// <host>-<ms>-<uuid8>: cut the last two dash-separated parts.
	i := strings.LastIndexByte(rest, '-')
	if i < 0 || !isHex(rest[i+1:], 8) {
		return "-"
	}
	rest = rest[:i]
	j := strings.LastIndexByte(rest, '-')
	if j <= 0 || !isDigits(rest[j+1:]) {
		return "-"
	}
	return rest[:j]
}

// MemberClientID returns the registration's "client_id" field (the Kafka
// client id the member's clients use), or "-". Pure.
func MemberClientID(registration []byte) string {
	if c := extras(registration).ClientID; c != "" {
		return c
	}
	return "-"
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

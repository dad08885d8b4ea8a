package zkdata

import (
	"bytes"
	"fmt"
	"strconv"
)

// FormatOffset encodes the next offset to consume as Kafka's ZooKeeper
// consumer stores it in /consumers/<group>/offsets/<topic>/<p>: plain
// decimal, no newline. It is pure, safe for concurrent use, and does not
// block.
func FormatOffset(next int64) []byte {
	return strconv.AppendInt(nil, next, 10)
}

// ParseOffset decodes an offsets node: a plain non-negative decimal (the next
// offset to consume), optionally surrounded by whitespace. Signs, empty data
// and values beyond int64 are rejected with an error wrapping ErrMalformed
// that names the topic and partition. It is pure, safe for concurrent use,
// and does not block.
func ParseOffset(topic string, partition int32, data []byte) (int64, error) {
	node := fmt.Sprintf("offset %s/%d", strconv.Quote(topic), partition)
	s := string(bytes.TrimSpace(data))
	if s == "" {
		return 0, malformed(node, "", "", "empty data")
	}
	if s[0] == '-' {
		return 0, malformed(node, "", s, "negative")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, malformed(node, "", s, "not a decimal integer")
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		e := malformed(node, "", s, "out of range")
		e.Err = err
		return 0, e
	}
	return n, nil
}

// FormatOwner encodes an owners node: the owner id as plain text (the JVM
// consumer writes "<consumerId>-<thread>"). It is pure, safe for concurrent
// use, and does not block.
func FormatOwner(ownerID string) []byte {
	return []byte(ownerID)
}

// ParseOwner decodes an owners node: its text with surrounding whitespace
// removed. Any data is accepted. It is pure, safe for concurrent use, and
// does not block.
func ParseOwner(data []byte) string {
	return string(bytes.TrimSpace(data))
}

package subscription

import (
	"fmt"
	"strings"
)

// MaxTopicLength is the longest topic name Kafka accepts.
const MaxTopicLength = 249

// internalPrefix starts the name of every internal topic.
const internalPrefix = "__"

// IsInternal reports whether topic is an internal Kafka topic, i.e. its name
// begins with "__" (for example __consumer_offsets). It is a pure function,
// safe for concurrent use, and does not block.
func IsInternal(topic string) bool {
	return strings.HasPrefix(topic, internalPrefix)
}

// ValidateTopic returns nil if name is a legal Kafka topic name: 1 to 249
// characters from [a-zA-Z0-9._-], and neither "." nor "..". Otherwise it
// returns an error wrapping ErrConfig that names the topic and the reason.
// It is a pure function, safe for concurrent use, and does not block.
func ValidateTopic(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: topic %q: empty name", ErrConfig, name)
	case len(name) > MaxTopicLength:
		return fmt.Errorf("%w: topic %q...: %d characters, the maximum is %d",
			ErrConfig, name[:64], len(name), MaxTopicLength)
	case name == "." || name == "..":
		return fmt.Errorf("%w: topic %q: reserved name", ErrConfig, name)
	}
	for i := 0; i < len(name); i++ {
		if !topicByte(name[i]) {
			return fmt.Errorf("%w: topic %q: character %q at byte %d not in [a-zA-Z0-9._-]",
				ErrConfig, name, name[i], i)
		}
	}
	return nil
}

// topicByte reports whether c may appear in a topic name.
func topicByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

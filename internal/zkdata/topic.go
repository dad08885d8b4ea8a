package zkdata

import "strconv"

// TopicPartitions is a decoded /brokers/topics/<topic> node: the replica list
// of every partition. It is a plain value; copies share the map, so treat it
// as read-only when sharing between goroutines.
type TopicPartitions struct {
	Version    int
	Partitions map[int32][]int32 // partition -> replica broker ids, never nil
	TopicID    string            // "topic_id" of newer brokers; "" if absent
}

type topicJSON struct {
	Version    int                `json:"version"`
	Partitions map[string][]int32 `json:"partitions"`
	TopicID    string             `json:"topic_id"`
}

// ParseTopic decodes the data of /brokers/topics/<name>. "partitions" is
// required; its keys must be canonical non-negative decimals and its values
// arrays of int32 broker ids. Other fields (adding_replicas,
// removing_replicas, ...) are ignored. Errors wrap ErrMalformed and name the
// topic and field. It is pure, safe for concurrent use, and does not block.
func ParseTopic(name string, data []byte) (TopicPartitions, error) {
	node := "topic " + strconv.Quote(name)
	var raw topicJSON
	if err := decodeObject(node, data, &raw); err != nil {
		return TopicPartitions{}, err
	}
	if raw.Partitions == nil {
		return TopicPartitions{}, malformed(node, "partitions", "", "missing")
	}
	t := TopicPartitions{
		Version:    raw.Version,
		Partitions: make(map[int32][]int32, len(raw.Partitions)),
		TopicID:    raw.TopicID,
	}
	for k, replicas := range raw.Partitions {
		p, reason := parseID(k)
		if reason != "" {
			return TopicPartitions{}, malformed(node, "partitions key", k, reason+" partition number")
		}
		t.Partitions[p] = replicas
	}
	return t, nil
}

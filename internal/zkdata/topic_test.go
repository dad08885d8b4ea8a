package zkdata

import "testing"

func TestParseTopic(t *testing.T) {
	wantParsed(t, func(data []byte) (TopicPartitions, error) { return ParseTopic("orders", data) }, []parsed[TopicPartitions]{
		{
			name: "version 1",
			data: `{"version":1,"partitions":{"0":[1,2,3],"1":[2,3,1]}}`,
			want: TopicPartitions{Version: 1, Partitions: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}}},
		},
		{
			name: "version 2 with reassignment and topic id",
			data: `{"version":2,"partitions":{"2":[3,1,4],"0":[1,2,3],"1":[2,3,1]},` +
				`"adding_replicas":{"2":[4]},"removing_replicas":{"2":[2]},"topic_id":"9uAl6IF9T5qGd3DqxNSG1Q"}`,
			want: TopicPartitions{Version: 2, TopicID: "9uAl6IF9T5qGd3DqxNSG1Q",
				Partitions: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 4}}},
		},
		{
			name: "version 3 with extra fields",
			data: `{"version":3,"partitions":{"0":[1]},"topic_id":"x","adding_replicas":{},"removing_replicas":{},"future":true}`,
			want: TopicPartitions{Version: 3, TopicID: "x", Partitions: map[int32][]int32{0: {1}}},
		},
		{
			name: "no partitions yet",
			data: `{"version":1,"partitions":{}}`,
			want: TopicPartitions{Version: 1, Partitions: map[int32][]int32{}},
		},
	})
}

func TestParseTopicErrors(t *testing.T) {
	wantMalformed(t, func(data []byte) error {
		_, err := ParseTopic("orders", data)
		return err
	}, []malformedCase{
		{`{"version":1,"partitions":{"0":[1,2,3],"1":[2,`, `zkdata: topic "orders": invalid JSON`},
		{`{"version":1}`, `zkdata: topic "orders": partitions: missing`},
		{`{"version":1,"partitions":null}`, "partitions: missing"},
		{`{"partitions":{"-1":[1]}}`, `zkdata: topic "orders": partitions key "-1": negative partition number`},
		{`{"partitions":{"x":[1]}}`, `partitions key "x": not a decimal integer partition number`},
		{`{"partitions":{"01":[1]}}`, `partitions key "01": leading zero`},
		{`{"partitions":{"0":["1"]}}`, "JSON string where int32 expected"},
		{`{"partitions":{"0":[1.5]}}`, "JSON number 1.5 where int32 expected"},
		{`{"partitions":{"0":[4294967296]}}`, "int32"},
		{`{"partitions":[[1,2]]}`, "partitions: JSON array"},
		{`{"partitions":{"0":[1]},"topic_id":5}`, "topic_id: JSON number"},
		{`"orders"`, "not a JSON object"},
	})
}

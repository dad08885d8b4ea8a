package zkdata

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseTopic(t *testing.T) {
	tests := []struct {
		name, data string
		want       TopicPartitions
	}{
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
	}
	for _, tt := range tests {
		got, err := ParseTopic("orders", []byte(tt.data))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func TestParseTopicErrors(t *testing.T) {
	tests := []struct {
		data, want string
	}{
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
	}
	for _, tt := range tests {
		_, err := ParseTopic("orders", []byte(tt.data))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseTopic(%s) = %v, want error containing %q", tt.data, err, tt.want)
		}
	}
}

func TestParsePartitionState(t *testing.T) {
	tests := []struct {
		name, data string
		want       PartitionState
	}{
		{"led", `{"controller_epoch":5,"leader":1,"version":1,"leader_epoch":3,"isr":[1,2,3]}`,
			PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2, 3}, ControllerEpoch: 5, Version: 1}},
		{"leaderless", `{"controller_epoch":5,"leader":-1,"version":1,"leader_epoch":4,"isr":[]}`,
			PartitionState{Leader: NoLeader, LeaderEpoch: 4, ISR: []int32{}, ControllerEpoch: 5, Version: 1}},
		{"broker zero, newer fields", `{"leader":0,"isr":[0],"leader_recovery_state":0,"version":2}`,
			PartitionState{Leader: 0, ISR: []int32{0}, Version: 2}},
	}
	for _, tt := range tests {
		got, err := ParsePartitionState("orders", 2, []byte(tt.data))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestParsePartitionStateErrors(t *testing.T) {
	tests := []struct {
		data, want string
	}{
		{`{"controller_epoch":5,"leader":1,"vers`, `zkdata: partition state "orders"/2: invalid JSON`},
		{`{"isr":[1]}`, `zkdata: partition state "orders"/2: leader: missing`},
		{`{"leader":null}`, "leader: missing"},
		{`{"leader":-2}`, `leader "-2": negative broker id`},
		{`{"leader":"1"}`, "leader: JSON string where int32 expected"},
		{`{"leader":1,"isr":"1,2"}`, "isr: JSON string"},
		{`{"leader":1,"leader_epoch":2147483648}`, "leader_epoch"},
		{`{"leader":1,"controller_epoch":true}`, "controller_epoch: JSON bool"},
	}
	for _, tt := range tests {
		_, err := ParsePartitionState("orders", 2, []byte(tt.data))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParsePartitionState(%s) = %v, want error containing %q", tt.data, err, tt.want)
		}
	}
}

func TestParseController(t *testing.T) {
	got, err := ParseController([]byte(`{"version":1,"brokerid":2,"timestamp":"1440000000000"}`))
	if err != nil || got != (Controller{BrokerID: 2, Version: 1}) {
		t.Errorf("ParseController = %+v, %v", got, err)
	}
	got, err = ParseController([]byte(`{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":7}`))
	if err != nil || got != (Controller{BrokerID: 3000, Version: 2}) {
		t.Errorf("ParseController v2 = %+v, %v", got, err)
	}
	for _, tt := range []struct{ data, want string }{
		{`{"version":1}`, "zkdata: controller: brokerid: missing"},
		{`{"brokerid":-1}`, `brokerid "-1": negative`},
		{`{"brokerid":"1"}`, "brokerid: JSON string"},
		{`{"brokerid":1`, "invalid JSON"},
		{`1`, "not a JSON object"},
	} {
		if _, err := ParseController([]byte(tt.data)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseController(%s) = %v, want error containing %q", tt.data, err, tt.want)
		}
	}
}

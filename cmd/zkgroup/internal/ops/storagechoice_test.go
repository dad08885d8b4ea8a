package ops

import (
	"errors"
	"strings"
	"testing"
)

func TestChooseStorage(t *testing.T) {
	zk := Offsets{"t": {0: 10, 1: 20}}
	boom := errors.New("coordinator unavailable")
	for _, tc := range []struct {
		name      string
		zk, kafka Offsets
		kafkaErr  error
		want      string
		note      string
	}{
		{"neither", Offsets{}, Offsets{}, nil, "kafka", "neither Kafka nor ZooKeeper"},
		{"zookeeper only", zk, Offsets{}, nil, "zookeeper", "ZooKeeper holds offsets for 2 partitions, Kafka none"},
		{"kafka only", Offsets{}, Offsets{"t": {0: 1}}, nil, "kafka", "Kafka holds offsets for 1 partitions, ZooKeeper none"},
		{"zookeeper ahead", zk, Offsets{"t": {0: 5, 1: 20}}, nil, "zookeeper", "ZooKeeper's are ahead on 1, Kafka's on 0"},
		{"kafka ahead", zk, Offsets{"t": {0: 11, 1: 21}, "u": {0: 1}}, nil, "kafka", "Kafka's are ahead on 3, ZooKeeper's on 0"},
		{"equal", zk, Offsets{"t": {0: 10, 1: 20}}, nil, "kafka", "ahead on 0"},
		{"kafka unreadable", zk, nil, boom, "zookeeper", "Kafka's could not be read: coordinator unavailable"},
		{"kafka unreadable, zookeeper empty", Offsets{}, nil, boom, "", ""},
	} {
		c, err := ChooseStorage(tc.zk, nil, tc.kafka, tc.kafkaErr)
		if tc.want == "" {
			if !errors.Is(err, boom) {
				t.Errorf("%s: %v, want Kafka's error", tc.name, err)
			}
			continue
		}
		if err != nil || c.Storage != tc.want || !strings.Contains(c.Note, tc.note) {
			t.Errorf("%s: %s (%q) %v, want %s (%q)", tc.name, c.Storage, c.Note, err, tc.want, tc.note)
		}
		want := tc.kafka
		if tc.want == "zookeeper" {
			want = tc.zk
		}
		if c.Committed.count() != want.count() {
			t.Errorf("%s: %d offsets shown, want %d", tc.name, c.Committed.count(), want.count())
		}
	}
}

func TestChooseStorageZooKeeperUnreadable(t *testing.T) {
	noAuth := errors.New("zk: not authenticated")
	c, err := ChooseStorage(nil, noAuth, Offsets{"t": {0: 1}}, nil)
	if err != nil || c.Storage != "kafka" || !strings.Contains(c.Note, "ZooKeeper's could not be read: zk: not authenticated") {
		t.Errorf("%+v %v; want Kafka's, saying why", c, err)
	}
	if _, err := ChooseStorage(nil, noAuth, nil, errors.New("kafka down")); err == nil || err.Error() != "kafka down" {
		t.Errorf("both unreadable: %v, want Kafka's error", err)
	}
}

func TestOldConsumerOwners(t *testing.T) {
	members := map[string]Member{"g_h-1-aaaa": {ID: "g_h-1-aaaa", Host: "h"}, "z": {ID: "z"}}
	for owner, want := range map[string]string{
		"g_h-1-aaaa-0": "g_h-1-aaaa", "g_h-1-aaaa-12": "g_h-1-aaaa", "z": "z",
		"g_h-1-aaaa-x": "", "g_h-1-aaaa-": "", "g_h-1-aaaa": "g_h-1-aaaa", "other-0": "",
	} {
		m, ok := memberOf(members, owner)
		if ok != (want != "") || m.ID != want {
			t.Errorf("memberOf(%q) = %q, %v; want %q", owner, m.ID, ok, want)
		}
	}
}

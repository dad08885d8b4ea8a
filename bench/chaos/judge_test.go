package chaos

import (
	"testing"
	"time"
)

func TestOffsetsPartition(t *testing.T) {
	// Java: "chaos-group-1".hashCode() = ..., found by Kafka in
	// __consumer_offsets-2 of 10 during a run.
	if got := offsetsPartition("chaos-group-1", 10); got != 2 {
		t.Errorf("offsetsPartition(chaos-group-1) = %d, want 2", got)
	}
	// "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs gives 0.
	if got := offsetsPartition("polygenelubricants", 10); got != 0 {
		t.Errorf("offsetsPartition(MIN_VALUE hash) = %d, want 0", got)
	}
	// "a".hashCode() = 97.
	if got := offsetsPartition("a", 50); got != 47 {
		t.Errorf("offsetsPartition(a) = %d, want 47", got)
	}
}

func TestParseOffsetCommit(t *testing.T) {
	line := `| offset: 1 CreateTime: 1796138477161 keySize: 30 valueSize: 24 sequence: 0 headerKeys: [] key: {"type":"1","data":{"group":"g","topic":"t","partition":20}} payload: {"version":"3","data":{"offset":42,"leaderEpoch":-1,"metadata":"","commitTimestamp":1796138477159}}`
	p, off, ts, ok := parseOffsetCommit(line, "g", "t")
	if !ok || p != 20 || off != 42 || ts != 1796138477159*int64(time.Millisecond) {
		t.Errorf("parse = %d %d %d %v", p, off, ts, ok)
	}
	if _, _, _, ok := parseOffsetCommit(line, "other", "t"); ok {
		t.Error("another group's commit was parsed")
	}
	tomb := `| offset: 2 CreateTime: 1 keySize: 30 valueSize: -1 sequence: 0 headerKeys: [] key: {"type":"1","data":{"group":"g","topic":"t","partition":20}} payload: <DELETE>`
	if _, _, _, ok := parseOffsetCommit(tomb, "g", "t"); ok {
		t.Error("a tombstone was parsed as a commit")
	}
}

func TestRegressions(t *testing.T) {
	h := map[int32][]commitEv{
		0: {{1, 10}, {2, 20}, {3, 15}, {4, 30}},
		1: {{1, 5}, {2, 5}, {3, 6}},
	}
	got := regressions(h)
	if len(got) != 1 || got[0].p != 0 || got[0].from != 20 || got[0].to != 15 {
		t.Errorf("regressions = %+v, want p0 20->15", got)
	}
}

func TestTwoOwners(t *testing.T) {
	ms := int64(time.Millisecond)
	sess := int64(6 * time.Second)
	ev := func(t int64, off int64, inc int32) printEv { return printEv{t: t * ms, off: off, p: 0, inc: inc} }
	cases := []struct {
		name string
		ev   []printEv
		want int
	}{
		{"handover", []printEv{ev(0, 1, 0), ev(10, 2, 0), ev(20, 3, 1), ev(30, 4, 1)}, 0},
		// a paused old owner (0) prints 3 after the new owner (1) started at 2
		{"late old owner", []printEv{ev(0, 1, 0), ev(7000, 2, 1), ev(7010, 3, 1), ev(7015, 3, 0), ev(7020, 4, 1)}, 1},
		// handover and back: 1 prints 3..4 and commits; 0 resumes from 5
		{"handover and back", []printEv{ev(0, 2, 0), ev(10, 3, 1), ev(20, 4, 1), ev(30, 5, 0)}, 0},
		// 0 goes on from its own position while 1 printed in between
		{"interleaved", []printEv{ev(0, 2, 0), ev(10, 3, 1), ev(20, 3, 0)}, 1},
		// 0 resumes its own position only after a session timeout (1 died
		// without committing)
		{"back after expiry", []printEv{ev(0, 2, 0), ev(10, 3, 1), ev(7000, 3, 0)}, 0},
	}
	for _, c := range cases {
		got := twoOwners(map[int32][]printEv{0: c.ev}, sess)
		if len(got) != c.want {
			t.Errorf("%s: %d overlaps (%+v), want %d", c.name, len(got), got, c.want)
		}
	}
}

package ops

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestTarget(t *testing.T) {
	b := Bounds{Earliest: 10, Latest: 100, AtTime: 42}
	for _, tc := range []struct {
		name    string
		spec    ResetSpec
		current int64
		bounds  Bounds
		want    int64
	}{
		{"earliest", ResetSpec{Mode: ToEarliest}, 50, b, 10},
		{"latest", ResetSpec{Mode: ToLatest}, 50, b, 100},
		{"offset inside", ResetSpec{Mode: ToOffset, Offset: 60}, 50, b, 60},
		{"offset below log", ResetSpec{Mode: ToOffset, Offset: 3}, 50, b, 10},
		{"offset beyond log", ResetSpec{Mode: ToOffset, Offset: 1000}, 50, b, 100},
		{"datetime", ResetSpec{Mode: ToDatetime}, 50, b, 42},
		{"datetime after last message", ResetSpec{Mode: ToDatetime}, 50, Bounds{10, 100, -1}, 100},
		{"shift back", ResetSpec{Mode: ShiftBy, Shift: -20}, 50, b, 30},
		{"shift forward past end", ResetSpec{Mode: ShiftBy, Shift: 80}, 50, b, 100},
		{"shift without commit", ResetSpec{Mode: ShiftBy, Shift: 5}, -1, b, 15},
		{"shift overflow", ResetSpec{Mode: ShiftBy, Shift: math.MaxInt64}, 50, b, 100},
		{"shift underflow", ResetSpec{Mode: ShiftBy, Shift: math.MinInt64}, 50, b, 10},
		{"empty log", ResetSpec{Mode: ToOffset, Offset: 7}, -1, Bounds{0, 0, -1}, 0},
	} {
		if got := Target(tc.spec, tc.current, tc.bounds); got != tc.want {
			t.Errorf("%s: Target = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// FuzzTarget: the target always lies within the log's bounds.
func FuzzTarget(f *testing.F) {
	f.Add(uint8(0), int64(5), int64(-1), int64(0), int64(10), int64(3))
	f.Add(uint8(4), int64(math.MaxInt64), int64(math.MaxInt64-1), int64(0), int64(math.MaxInt64), int64(-1))
	f.Add(uint8(4), int64(math.MinInt64), int64(3), int64(2), int64(9), int64(-1))
	f.Fuzz(func(t *testing.T, mode uint8, arg, current, earliest, latest, at int64) {
		if earliest < 0 || latest < earliest {
			return
		}
		modes := []string{ToEarliest, ToLatest, ToOffset, ToDatetime, ShiftBy}
		spec := ResetSpec{Mode: modes[int(mode)%len(modes)], Offset: arg, Shift: arg}
		got := Target(spec, current, Bounds{earliest, latest, at})
		if got < earliest || got > latest {
			t.Fatalf("Target(%+v, %d, [%d,%d] at %d) = %d", spec, current, earliest, latest, at, got)
		}
	})
}

func TestParseDatetime(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2024-05-01T10:00:00Z":           time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
		"2024-05-01T12:00:00+02:00":      time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
		"2024-05-01T10:00:00.250":        time.Date(2024, 5, 1, 10, 0, 0, 250e6, time.UTC),
		" 2024-05-01T10:00:00 ":          time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
		"2024-05-01T10:00:00.123456789Z": time.Date(2024, 5, 1, 10, 0, 0, 123456789, time.UTC),
	} {
		got, err := ParseDatetime(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseDatetime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseDatetime("yesterday"); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "yesterday") {
		t.Errorf("err = %v", err)
	}
	if got, err := ParseDatetime("1970-01-01T00:00:00Z"); err != nil || got.UnixMilli() != 0 {
		t.Errorf("ParseDatetime(1970) = %v, %v", got, err)
	}
}

// TestDatetimeBefore1970: a time before 1970 was sent to Kafka as a
// negative timestamp, which Kafka reads as latest (-1), earliest (-2) or
// the largest timestamp (-3): the reset skipped the whole log. It is
// refused, by the flag's parser and by PlanReset, before any request.
func TestDatetimeBefore1970(t *testing.T) {
	for _, in := range []string{"1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.9999999Z", "1969-12-31T23:59:59.998Z",
		"1969-12-31T23:59:59.997", "1970-01-01T01:00:00+02:00", "0001-01-01T00:00:00Z"} {
		if _, err := ParseDatetime(in); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--to-datetime") ||
			!strings.Contains(err.Error(), "before 1970") {
			t.Errorf("ParseDatetime(%q) = %v, want an ErrConfig about --to-datetime before 1970", in, err)
		}
	}
	// No client and no store: the refusal comes before either is used.
	_, err := PlanReset(context.Background(), nil, nil, "t", []int32{0},
		ResetSpec{Mode: ToDatetime, Time: time.UnixMilli(-1)})
	if !errors.Is(err, ErrConfig) {
		t.Errorf("PlanReset before 1970 = %v, want ErrConfig", err)
	}
}

func TestLag(t *testing.T) {
	for _, tc := range []struct{ c, e, want int64 }{{10, 15, 5}, {-1, 15, -1}, {10, -1, -1}, {20, 15, 0}} {
		if got := Lag(tc.c, tc.e); got != tc.want {
			t.Errorf("Lag(%d, %d) = %d, want %d", tc.c, tc.e, got, tc.want)
		}
	}
}

func TestDescriptionText(t *testing.T) {
	d := &Description{Group: "g", OffsetStorage: "kafka",
		Partitions: []Row{{Group: "g", Topic: "t", Partition: 0, CurrentOffset: 5, LogEndOffset: 9, Lag: 4, ConsumerID: "m1", Host: "-", ClientID: "-"},
			{Group: "g", Topic: "t", Partition: 1, CurrentOffset: -1, LogEndOffset: 3, Lag: -1, ConsumerID: "-", Host: "-", ClientID: "-"}}}
	out := d.Text()
	for _, want := range []string{"Consumer group 'g' has no active members.", "GROUP  TOPIC  PARTITION  CURRENT-OFFSET", "g      t      0          5               9               4    m1", "g      t      1          -               3               -    -"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	d.Members = []Member{{ID: "m1", Pattern: "static", Subscription: []string{"t"}, Strategy: "balanced", Partitions: 1}}
	if out := d.Text(); !strings.Contains(out, "m1      -     -          static:t      balanced  1") || strings.Contains(out, "no active members") ||
		strings.Contains(out, "MISMATCH") {
		t.Errorf("members:\n%s", out)
	}
	if !strings.HasSuffix(out, "\n(offsets from kafka storage)\n") {
		t.Errorf("configured storage:\n%s", out)
	}
	d.OffsetStorage, d.OffsetStorageNote = "zookeeper", "ZooKeeper holds offsets for 2 partitions, Kafka none"
	if out := d.Text(); !strings.HasSuffix(out, "\n(offsets from zookeeper storage: ZooKeeper holds offsets for 2 partitions, Kafka none; --offset-storage picks one)\n") {
		t.Errorf("chosen storage:\n%s", out)
	}
}

func TestStrategyMismatch(t *testing.T) {
	ms := []Member{{ID: "a", Strategy: "range", czxid: 9}, {ID: "b", Strategy: "balanced", czxid: 7},
		{ID: "c", Strategy: "range", czxid: 8}, {ID: "jvm", czxid: 1}}
	sm := strategyMismatch(ms)
	if sm == nil || sm.Oldest != "b" || sm.InForce != "balanced" || fmt.Sprint(sm.Strategies) != "map[balanced:[b] range:[a c]]" {
		t.Fatalf("strategyMismatch = %+v", sm)
	}
	if sm := strategyMismatch(ms[:1]); sm != nil {
		t.Errorf("one strategy: %+v", sm)
	}
	if sm := strategyMismatch([]Member{ms[0], ms[2], ms[3]}); sm != nil {
		t.Errorf("one strategy and a member publishing none: %+v", sm)
	}
	d := &Description{Group: "g", Members: ms, StrategyMismatch: sm}
	want := `STRATEGY MISMATCH: the members publish different assignment strategies ("balanced" by b; "range" by a, c); they compute with "balanced", the strategy of the oldest member b`
	if out := d.Text(); !strings.Contains(out, want) || !strings.Contains(out, "jvm     -     -          :             -         0") {
		t.Errorf("text lacks %q or jvm's row:\n%s", want, out)
	}
}

// TestDescriptionTextAway: members away are listed with their grace and
// when their marker was written, said to be that and not when they
// stopped; without any, nothing is said of them.
func TestDescriptionTextAway(t *testing.T) {
	d := &Description{Group: "g", OffsetStorage: "kafka"}
	if out := d.Text(); strings.Contains(out, "away") {
		t.Errorf("no member away, yet:\n%s", out)
	}
	d.Away = []Away{{ID: "web-1", Grace: "10s", GraceSeconds: 10, Host: "h1", ClientID: "zkgroup",
		MarkerWritten: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}}
	out := d.Text()
	for _, want := range []string{"Members away", "not when it stopped", "MEMBER  HOST  CLIENT-ID  GRACE  MARKER-WRITTEN",
		"web-1   h1    zkgroup    10s    2025-03-01T12:00:00Z", "zkgroup leave --instance-id"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

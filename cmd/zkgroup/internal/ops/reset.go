package ops

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/offsets"
)

// Reset modes, as kafka-consumer-groups names them.
const (
	ToEarliest = "to-earliest"
	ToLatest   = "to-latest"
	ToOffset   = "to-offset"
	ToDatetime = "to-datetime"
	ShiftBy    = "shift-by"
)

// ResetSpec says where to move offsets. Offset is used by ToOffset, Time
// by ToDatetime, Shift by ShiftBy. A plain value.
type ResetSpec struct {
	Mode   string
	Offset int64
	Time   time.Time
	Shift  int64
}

// ResetRow is the plan for one partition. Current is -1 when nothing is
// committed.
type ResetRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Current   int64  `json:"current_offset"`
	Earliest  int64  `json:"earliest_offset"`
	Latest    int64  `json:"latest_offset"`
	Target    int64  `json:"new_offset"`
}

// Bounds are a partition's log bounds and, for ToDatetime, the offset of
// the first message at or after the time (-1: none).
type Bounds struct {
	Earliest, Latest, AtTime int64
}

// Target computes the new offset of a partition, clamped to
// [Earliest, Latest] as kafka-consumer-groups does. ShiftBy moves from the
// committed offset, or from Earliest when nothing is committed. ToDatetime
// without a message at or after the time goes to Latest. Pure; never
// overflows.
func Target(spec ResetSpec, current int64, b Bounds) int64 {
	var t int64
	switch spec.Mode {
	case ToEarliest:
		t = b.Earliest
	case ToLatest:
		t = b.Latest
	case ToOffset:
		t = spec.Offset
	case ToDatetime:
		t = b.AtTime
		if t < 0 {
			t = b.Latest
		}
	case ShiftBy:
		base := current
		if base < 0 {
			base = b.Earliest
		}
		switch {
		case spec.Shift > 0 && base > math.MaxInt64-spec.Shift:
			t = math.MaxInt64
		case spec.Shift < 0 && base < math.MinInt64-spec.Shift:
			t = math.MinInt64
		default:
			t = base + spec.Shift
		}
	}
	if t > b.Latest {
		t = b.Latest
	}
	if t < b.Earliest {
		t = b.Earliest
	}
	return t
}

// ParseDatetime accepts RFC 3339 ("2024-05-01T10:00:00Z",
// "...+02:00", with fractions) and the forms without a zone
// ("2024-05-01T10:00:00", "2024-05-01T10:00:00.000"), read as UTC. A
// time before 1970 is refused (see CheckDatetime). Pure.
func ParseDatetime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			if err := CheckDatetime(t); err != nil {
				return time.Time{}, err
			}
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: --to-datetime %s: want RFC 3339 such as 2024-05-01T10:00:00Z", ErrConfig, quoteClipped(s))
}

// CheckDatetime refuses a time before 1970-01-01T00:00:00Z, wrapping
// ErrConfig: Kafka's offset lookup takes milliseconds since 1970, and
// the negative ones mean "latest" (-1), "earliest" (-2) and "the largest
// timestamp" (-3), not a time. Pure.
func CheckDatetime(t time.Time) error {
	if t.UnixMilli() < 0 {
		return fmt.Errorf("%w: --to-datetime %s: before 1970-01-01T00:00:00Z (Kafka reads negative times as latest or earliest)",
			ErrConfig, t.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// quoteClipped quotes s, cut to 64 bytes with "..." marking a cut.
func quoteClipped(s string) string {
	if len(s) <= 64 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", s[:64])
}

// PlanReset reads the committed offset (from store) and the log bounds of
// each partition of topic (all when partitions is empty) and computes the
// new offsets; a ToDatetime before 1970 is refused (CheckDatetime). It
// writes nothing. Blocks on Kafka and the store.
func PlanReset(ctx context.Context, client sarama.Client, store offsets.Store, topic string, partitions []int32, spec ResetSpec) ([]ResetRow, error) {
	if spec.Mode == ToDatetime {
		if err := CheckDatetime(spec.Time); err != nil {
			return nil, err
		}
	}
	if len(partitions) == 0 {
		ps, err := client.Partitions(topic)
		if err != nil {
			return nil, fmt.Errorf("%w: partitions of %q: %w", ErrNoTopic, topic, err)
		}
		partitions = ps
	}
	rows := make([]ResetRow, 0, len(partitions))
	for _, p := range partitions {
		r := ResetRow{Topic: topic, Partition: p, Current: -1}
		cur, ok, err := store.Fetch(ctx, topic, p)
		if err != nil {
			return nil, err
		}
		if ok {
			r.Current = cur
		}
		var b Bounds
		if b.Earliest, err = client.GetOffset(topic, p, sarama.OffsetOldest); err != nil {
			return nil, fmt.Errorf("ops: earliest offset of %s/%d: %w", topic, p, err)
		}
		if b.Latest, err = client.GetOffset(topic, p, sarama.OffsetNewest); err != nil {
			return nil, fmt.Errorf("ops: latest offset of %s/%d: %w", topic, p, err)
		}
		b.AtTime = -1
		if spec.Mode == ToDatetime {
			if b.AtTime, err = client.GetOffset(topic, p, spec.Time.UnixMilli()); err != nil {
				return nil, fmt.Errorf("ops: offset of %s/%d at %v: %w", topic, p, spec.Time, err)
			}
		}
		r.Earliest, r.Latest = b.Earliest, b.Latest
		r.Target = Target(spec, r.Current, b)
		rows = append(rows, r)
	}
	return rows, nil
}

// ExecuteReset writes each row's Target with store.Reset (which may move
// an offset backwards). It stops at the first failure. Blocks on the
// store.
func ExecuteReset(ctx context.Context, store offsets.Store, rows []ResetRow) error {
	for _, r := range rows {
		if err := store.Reset(ctx, r.Topic, r.Partition, r.Target); err != nil {
			return err
		}
	}
	return nil
}

// ResetText formats a plan like kafka-consumer-groups --reset-offsets.
// Pure.
func ResetText(group string, rows []ResetRow) string {
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, []string{group, r.Topic, fmt.Sprint(r.Partition), dash(r.Current), fmt.Sprint(r.Target)})
	}
	return Table([]string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"}, out)
}

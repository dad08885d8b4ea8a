package partition

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/fetch"
)

// TestSlabOfFields: each Message of a slab carries exactly what the
// records iterator yields (nil and empty keys kept apart, headers, record
// timestamps, a record batch's max timestamp and a legacy wrapper's
// timestamp as BlockTimestamp), records before the
// position are left out, and the run flag says whether the offsets follow
// each other.
func TestSlabOfFields(t *testing.T) {
	m := &Manager{}
	hdr := []*sarama.RecordHeader{{Key: []byte("h"), Value: []byte("v")}}
	batch := &sarama.RecordBatch{FirstOffset: 100, LastOffsetDelta: 4, FirstTimestamp: time.Unix(1e9, 0), MaxTimestamp: time.Unix(1e9+2, 0), Records: []*sarama.Record{
		{OffsetDelta: 0, Value: []byte("a")},
		{OffsetDelta: 1, Key: []byte{}, Value: []byte("b"), Headers: hdr, TimestampDelta: time.Second},
		{OffsetDelta: 2, Key: []byte("k"), TimestampDelta: 2 * time.Second},
		{OffsetDelta: 4, Key: []byte("k2"), Value: []byte{}},
	}}
	inner := []*sarama.MessageBlock{
		{Offset: 0, Msg: &sarama.Message{Version: 1, Value: []byte("l0"), Timestamp: time.Unix(150, 0)}},
		{Offset: 1, Msg: &sarama.Message{Version: 1, Key: []byte("lk"), Value: []byte("l1"), Timestamp: time.Unix(151, 0)}},
	}
	legacy := &sarama.MessageBlock{Offset: 106, Msg: &sarama.Message{Version: 1, Codec: sarama.CompressionGZIP,
		Timestamp: time.Unix(200, 0), Set: &sarama.MessageSet{Messages: inner}}}
	for _, tc := range []struct {
		name  string
		block *sarama.FetchResponseBlock
		from  int64
		run   bool
	}{
		{"record batch with a gap", &sarama.FetchResponseBlock{HighWaterMarkOffset: 105,
			RecordsSet: []*sarama.Records{{RecordBatch: batch}}}, 100, false},
		{"record batch from its second record (101, 102, 104)", &sarama.FetchResponseBlock{HighWaterMarkOffset: 105,
			RecordsSet: []*sarama.Records{{RecordBatch: batch}}}, 101, false},
		{"record batch's first three, a run", &sarama.FetchResponseBlock{HighWaterMarkOffset: 103,
			RecordsSet: []*sarama.Records{{RecordBatch: &sarama.RecordBatch{FirstOffset: 100, LastOffsetDelta: 2,
				FirstTimestamp: batch.FirstTimestamp, Records: batch.Records[:3]}}}}, 100, true},
		{"legacy compressed message set", &sarama.FetchResponseBlock{HighWaterMarkOffset: 107,
			RecordsSet: []*sarama.Records{{MsgSet: &sarama.MessageSet{Messages: []*sarama.MessageBlock{legacy}}}}}, 105, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := fetch.RecordsOf("t", 3, tc.block, tc.from)
			var want []Message
			for r := range recs.All() {
				if r.Offset < tc.from {
					continue
				}
				want = append(want, Message{Topic: "t", Partition: 3, Offset: r.Offset, Key: r.Key, Value: r.Value,
					Headers: r.Headers, Timestamp: r.Timestamp, BlockTimestamp: r.BlockTimestamp})
			}
			got, run := m.slabOf(recs, tc.from)
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("%d messages, want %d (more than none)", len(got), len(want))
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], want[i]) || (got[i].Key == nil) != (want[i].Key == nil) || (got[i].Value == nil) != (want[i].Value == nil) {
					t.Errorf("message %d:\n got %s\nwant %s", i, show(got[i]), show(want[i]))
				}
			}
			if run != tc.run {
				t.Errorf("run = %v, want %v", run, tc.run)
			}
		})
	}
}

func show(m Message) string {
	return fmt.Sprintf("%s/%d@%d key %q (nil %v) value %q (nil %v) headers %d ts %v block %v",
		m.Topic, m.Partition, m.Offset, m.Key, m.Key == nil, m.Value, m.Value == nil, len(m.Headers), m.Timestamp, m.BlockTimestamp)
}

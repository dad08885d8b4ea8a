package fetch

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestSegmentsYieldWhatAllYields: walking a Records by its segments (a
// record batch's records from RecordBatch's index, with RecordTime, the
// rest through Segment.All) gives exactly the records All gives, in the
// same order: a batch fetched mid-way, a batch under LogAppendTime, a
// control batch (not yielded), and a legacy message set.
func TestSegmentsYieldWhatAllYields(t *testing.T) {
	appendTime := batch(6, 8, 1, false)
	appendTime.RecordBatch.LogAppendTime = true
	appendTime.RecordBatch.MaxTimestamp = time.Unix(300, 0)
	var inner []*sarama.MessageBlock
	for i := range int64(2) {
		inner = append(inner, &sarama.MessageBlock{Offset: i, Msg: &sarama.Message{Version: 1, Value: fmt.Appendf(nil, "v%d", 10+i), Timestamp: time.Unix(150+i, 0)}})
	}
	legacy := &sarama.MessageBlock{Offset: 11, Msg: &sarama.Message{Version: 1, Codec: sarama.CompressionGZIP,
		Timestamp: time.Unix(200, 0), Set: &sarama.MessageSet{Messages: inner}}}
	block := &sarama.FetchResponseBlock{HighWaterMarkOffset: 12, RecordsSet: []*sarama.Records{
		batch(0, 4, 1, false), marker(5, 1, false), appendTime,
		{MsgSet: &sarama.MessageSet{Messages: []*sarama.MessageBlock{legacy}}}}}
	r := RecordsOf("t", 0, block, 2)

	var want []Record
	for rec := range r.All() {
		want = append(want, *rec)
	}
	var got []Record
	segs := r.Segments()
	for i := range segs {
		b, from := segs[i].RecordBatch()
		if b == nil {
			for rec := range segs[i].All() {
				got = append(got, *rec)
			}
			continue
		}
		for _, x := range b.Records[from:] {
			got = append(got, Record{Offset: b.FirstOffset + x.OffsetDelta, Key: x.Key, Value: x.Value, Headers: x.Headers,
				Timestamp: RecordTime(b, x), BlockTimestamp: b.MaxTimestamp})
		}
	}
	if len(want) != r.Len() || len(want) != 3+3+2 {
		t.Fatalf("All yields %d records, Len %d; want 8 (2-4, 6-8, 10-11)", len(want), r.Len())
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("by segments:\n%v\nAll:\n%v", got, want)
	}
	if got := want[3].Timestamp; !got.Equal(time.Unix(300, 0)) {
		t.Errorf("LogAppendTime record: timestamp %v, want the batch's max timestamp", got)
	}
}

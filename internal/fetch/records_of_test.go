package fetch

import (
	"slices"
	"testing"

	"github.com/IBM/sarama"
)

// TestRecordsOf: the exported parse hands over what the broker loop would
// of a block fetched mid-batch: the records from the fetch offset on,
// with the block's high watermark and the next offset; nil when nothing
// is at or after it.
func TestRecordsOf(t *testing.T) {
	block := &sarama.FetchResponseBlock{HighWaterMarkOffset: 20,
		RecordsSet: []*sarama.Records{batch(5, 9, 1, false), marker(10, 1, false), batch(11, 12, 1, false)}}
	r := RecordsOf("t", 3, block, 7)
	if r.Topic != "t" || r.Partition != 3 || r.HighWaterMark != 20 || r.NextOffset != 13 || r.Len() != 5 {
		t.Fatalf("records %s/%d hwm %d next %d len %d, want t/3 20 13 5", r.Topic, r.Partition, r.HighWaterMark, r.NextOffset, r.Len())
	}
	if got, want := offsets(r), []int64{7, 8, 9, 11, 12}; !slices.Equal(got, want) {
		t.Errorf("offsets %v, want %v", got, want)
	}
	if r := RecordsOf("t", 3, block, 13); r != nil {
		t.Errorf("from past the block: %d records, want nil", r.Len())
	}
}

package partition

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/fetch"
)

// decodedShare is one partition's share of a fetch response as sarama
// decodes it: batches of perBatch records of 100-byte values and no key,
// the records of a batch in one array and their values in one buffer,
// timestamps in the local zone, headers empty and not nil.
func decodedShare(batches, perBatch int) *fetch.Records {
	buf := make([]byte, batches*perBatch*100)
	block := &sarama.FetchResponseBlock{HighWaterMarkOffset: int64(batches * perBatch)}
	for b := range batches {
		recs := make([]sarama.Record, perBatch)
		rb := &sarama.RecordBatch{FirstOffset: int64(b * perBatch), LastOffsetDelta: int32(perBatch - 1),
			FirstTimestamp: time.UnixMilli(1.7e12), MaxTimestamp: time.UnixMilli(1.7e12 + 5), Records: make([]*sarama.Record, perBatch)}
		for i := range recs {
			at := (b*perBatch + i) * 100
			recs[i] = sarama.Record{OffsetDelta: int64(i), TimestampDelta: time.Millisecond,
				Value: buf[at : at+100 : at+100], Headers: []*sarama.RecordHeader{}}
			rb.Records[i] = &recs[i]
		}
		block.RecordsSet = append(block.RecordsSet, &sarama.Records{RecordBatch: rb})
	}
	return fetch.RecordsOf("t", 0, block, 0)
}

// BenchmarkSlab: a share of 3,000 records (30 batches of 100) made into
// Messages and handed-out batches of up to MaxUnacked (10,000), as
// consumeFetch does between taking a share and offering its batch;
// ns/op is per record, and so is cpu-ns/msg (the process's CPU time, the
// figure to compare on a busy machine).
//
//	go test -run='^$' -bench=Slab -benchmem -count=5 ./internal/partition/
func BenchmarkSlab(b *testing.B) {
	recs := decodedShare(30, 100)
	m := &Manager{}
	b.ReportAllocs()
	c0 := cpuNow()
	b.ResetTimer()
	for i := 0; i < b.N; i += recs.Len() {
		vals, _ := m.slabOf(recs, 0)
		if m.newHandout(vals).Len() != recs.Len() {
			b.Fatal("short slab")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/msg")
}

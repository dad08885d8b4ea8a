package fetch

import "github.com/IBM/sarama"

// RecordsOf returns what a fetch of topic/partition at offset from hands
// over of block, a partition's block of a fetch response, under
// read_uncommitted: its records at or after from, as Partition.Take would
// (nil when there is none). It is the broker loop's own parsing, for fakes
// of a Fetcher (internal/partition's tests) that must hand out Records
// as a Fetcher does.
func RecordsOf(topic string, partition int32, block *sarama.FetchResponseBlock, from int64) *Records {
	out, _ := parseBlock(topic, partition, block, nil, from, false)
	return out.recs
}

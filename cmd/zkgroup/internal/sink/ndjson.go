package sink

import (
	"fmt"

	"github.com/zkgroup/zkgroup/manager"
)

// ContentTypeNDJSON is the Content-Type of an HTTP batch: newline-delimited
// JSON, one Record per line.
const ContentTypeNDJSON = "application/x-ndjson"

// appendNDJSON appends msgs to dst as JSON lines, exactly as the stdout
// sink writes them (AppendJSONLine). A message that cannot be encoded (a
// timestamp past year 9999) stops it with an error naming the message;
// dst then holds the lines before it. Pure.
func appendNDJSON(dst []byte, msgs []*manager.Message) ([]byte, error) {
	for _, m := range msgs {
		var err error
		if dst, err = AppendJSONLine(dst, m); err != nil {
			return dst, fmt.Errorf("encoding %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
		}
	}
	return dst, nil
}

// ndjsonSizeHint guesses the encoded size of msgs, to size a buffer once:
// their bytes plus about 160 bytes of JSON per message. Pure.
func ndjsonSizeHint(msgs []*manager.Message) int {
	n := 0
	for _, m := range msgs {
		n += MessageSize(m) + 160
	}
	return n
}

// batchBody encodes msgs (not empty) as one batch of the sink named by
// what: their JSON lines (appendNDJSON), and where names the batch
// (batchWhere). A message that cannot be encoded fails the batch
// permanently. Pure.
func batchBody(what string, msgs []*manager.Message) (where string, body []byte, err error) {
	where = batchWhere(msgs)
	body, err = appendNDJSON(make([]byte, 0, ndjsonSizeHint(msgs)), msgs)
	if err != nil {
		return where, nil, Permanent(fmt.Errorf("sink: %s: batch %s: %w", what, where, err))
	}
	return where, body, nil
}

// batchWhere names a batch in error texts: "topic/partition@first..last
// (n messages)", or "topic/partition@offset" for one message. msgs is not
// empty.
func batchWhere(msgs []*manager.Message) string {
	first, last := msgs[0], msgs[len(msgs)-1]
	if len(msgs) == 1 {
		return fmt.Sprintf("%s/%d@%d", first.Topic, first.Partition, first.Offset)
	}
	return fmt.Sprintf("%s/%d@%d..%d (%d messages)", first.Topic, first.Partition, first.Offset, last.Offset, len(msgs))
}

// checkLimits validates batch limits for the sink named by what.
func checkLimits(what string, l BatchLimits) error {
	switch {
	case l.MaxMessages < 0:
		return fmt.Errorf("%w: %s: Batch.MaxMessages: %d is negative", ErrConfig, what, l.MaxMessages)
	case l.MaxBytes < 0:
		return fmt.Errorf("%w: %s: Batch.MaxBytes: %d is negative", ErrConfig, what, l.MaxBytes)
	case l.Linger < 0:
		return fmt.Errorf("%w: %s: Batch.Linger: %v is negative", ErrConfig, what, l.Linger)
	}
	return nil
}

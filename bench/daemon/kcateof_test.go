package daemon

import (
	"bytes"
	"fmt"
	"io"
)

// kcatEnd watches kcat's stderr for its partition-end notes,
//
//	% Reached end of topic <topic> [<partition>] at offset <offset>
//
// and calls p.atEnd once every partition of ends has reached its end
// offset. Write is called from one goroutine (exec's stderr copier).
type kcatEnd struct {
	p       *progress
	topic   string
	ends    map[int32]int64 // partition -> its end offset
	reached map[int32]bool
	buf     []byte
}

func newKcatEnd(topic string, ends map[int32]int64) func(p *progress) io.Writer {
	return func(p *progress) io.Writer {
		return &kcatEnd{p: p, topic: topic, ends: ends, reached: map[int32]bool{}}
	}
}

func (k *kcatEnd) Write(b []byte) (int, error) {
	k.buf = append(k.buf, b...)
	for {
		i := bytes.IndexByte(k.buf, '\n')
		if i < 0 {
			break
		}
		k.line(string(k.buf[:i]))
		k.buf = k.buf[i+1:]
	}
	return len(b), nil
}

func (k *kcatEnd) line(s string) {
	var topic string
	var part int32
	var off int64
	if _, err := fmt.Sscanf(s, "%% Reached end of topic %s [%d] at offset %d", &topic, &part, &off); err != nil || topic != k.topic {
		return
	}
	if end, ok := k.ends[part]; ok && off >= end && !k.reached[part] {
		k.reached[part] = true
		if len(k.reached) == len(k.ends) {
			k.p.atEnd()
		}
	}
}

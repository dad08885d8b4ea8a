package sink

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/zkgroup/zkgroup/manager"
)

// StdoutMaxBytes is the stdout sink's BatchLimits.MaxBytes: it bounds the
// buffer one batch is encoded into (JSON adds about a third to base64
// values, and at most six bytes per byte of control characters), so that
// the daemon's memory does not grow with a backlog.
const StdoutMaxBytes = 1 << 20

// keepBuffer is the largest encoding buffer kept for reuse; a larger one
// (a message of several MB alone) is left to the garbage collector.
const keepBuffer = 8 << 20

// Stdout writes each message as a JSON line (see Record and
// AppendJSONLine) to a writer. A batch is encoded, outside any lock, into
// a reused buffer and written with one Write call under the sink's lock,
// so that lines of concurrent partitions never interleave. It is a
// BatchSink: BatchLimits is MaxBytes StdoutMaxBytes, no count limit and
// no linger (a batch is what the consumer handed over). Safe for
// concurrent use; Deliver and DeliverBatch block on the write.
type Stdout struct {
	mu   sync.Mutex
	w    io.Writer
	bufs sync.Pool // of *[]byte
}

// NewStdout returns a sink writing to w (os.Stdout in the daemon).
func NewStdout(w io.Writer) *Stdout { return &Stdout{w: w} }

// BatchLimits returns the stdout sink's limits (see Stdout).
func (s *Stdout) BatchLimits() BatchLimits { return BatchLimits{MaxBytes: StdoutMaxBytes} }

// Deliver writes the message's line; the message is delivered once the
// write returned without error.
func (s *Stdout) Deliver(ctx context.Context, m *manager.Message) error {
	one := [1]*manager.Message{m}
	return s.DeliverBatch(ctx, one[:])
}

// DeliverBatch writes the messages' lines with one Write call; they are
// delivered once it returned without error. A message that cannot be
// encoded (a timestamp beyond year 9999) fails the batch with a permanent
// error naming it, and nothing is written. A failed write may have written
// some of the lines.
func (s *Stdout) DeliverBatch(ctx context.Context, msgs []*manager.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer func() {
		if cap(*bp) <= keepBuffer {
			*bp = (*bp)[:0]
			s.bufs.Put(bp)
		}
	}()
	b := (*bp)[:0]
	for _, m := range msgs {
		var err error
		if b, err = AppendJSONLine(b, m); err != nil {
			*bp = b
			return Permanent(fmt.Errorf("sink: stdout: encoding %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err))
		}
	}
	*bp = b
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(b); err != nil {
		first, last := msgs[0], msgs[len(msgs)-1]
		return fmt.Errorf("sink: stdout: writing %s/%d@%d..%d: %w", first.Topic, first.Partition, first.Offset, last.Offset, err)
	}
	return nil
}

// Close does nothing: stdout belongs to the process.
func (s *Stdout) Close() error { return nil }

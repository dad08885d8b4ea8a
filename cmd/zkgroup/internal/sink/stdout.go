package sink

import (
	"context"
	"fmt"
	"github.com/zkgroup/zkgroup/manager"
	"io"
	"sync"
)

// Stdout writes each message as a JSON line (see Record) to a writer, one
// Write call per line so that lines of concurrent partitions never
// interleave. Safe for concurrent use; Deliver blocks on the write.
type Stdout struct {
	mu sync.Mutex
	w  io.Writer
}

// NewStdout returns a sink writing to w (os.Stdout in the daemon).
func NewStdout(w io.Writer) *Stdout { return &Stdout{w: w} }

// Deliver writes the message's line; the message is delivered once the
// write returned without error.
func (s *Stdout) Deliver(ctx context.Context, m *manager.Message) error {
	line, err := EncodeJSONLine(m)
	if err != nil {
		return Permanent(fmt.Errorf("sink: stdout: encoding %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(line); err != nil {
		return fmt.Errorf("sink: stdout: writing %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
	}
	return nil
}

// Close does nothing: stdout belongs to the process.
func (s *Stdout) Close() error { return nil }

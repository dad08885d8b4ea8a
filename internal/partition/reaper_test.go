package partition

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// slowPC is a PartitionConsumer whose channels close only when release is
// closed after AsyncClose, as sarama's do after its broker's fetch cycle.
type slowPC struct {
	sarama.PartitionConsumer
	msgs    chan *sarama.ConsumerMessage
	errs    chan *sarama.ConsumerError
	release chan struct{}
	closing chan struct{}
}

func newSlowPC() *slowPC {
	pc := &slowPC{msgs: make(chan *sarama.ConsumerMessage, 4), errs: make(chan *sarama.ConsumerError, 1),
		release: make(chan struct{}), closing: make(chan struct{})}
	pc.msgs <- &sarama.ConsumerMessage{Offset: 1}
	go func() {
		<-pc.closing
		<-pc.release
		close(pc.msgs)
		close(pc.errs)
	}()
	return pc
}

func (p *slowPC) AsyncClose()                              { close(p.closing) }
func (p *slowPC) Messages() <-chan *sarama.ConsumerMessage { return p.msgs }
func (p *slowPC) Errors() <-chan *sarama.ConsumerError     { return p.errs }
func (p *slowPC) drained() bool                            { return len(p.msgs) == 0 }

// TestReaperHandsOff: reap returns before sarama lets go of the
// PartitionConsumer; Close waits until it has; without a Reaper (or after
// Close) reap waits itself.
func TestReaperHandsOff(t *testing.T) {
	r := NewReaper()
	pc := newSlowPC()
	r.Reap(pc) // must not block although pc's channels are still open
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a reaped PartitionConsumer was still open")
	case <-time.After(50 * time.Millisecond): // Close must still be waiting
	}
	close(pc.release)
	<-closed
	if !pc.drained() {
		t.Error("the reaped PartitionConsumer's buffer was not drained")
	}

	after := newSlowPC()
	done := make(chan struct{})
	go func() { r.Reap(after); close(done) }()
	select {
	case <-done:
		t.Fatal("reap after Close returned before the PartitionConsumer closed")
	case <-time.After(50 * time.Millisecond):
	}
	close(after.release)
	<-done
	var none *Reaper
	nilPC := newSlowPC()
	close(nilPC.release)
	none.Reap(nilPC) // a nil Reaper drains in place
	if !nilPC.drained() {
		t.Error("a nil Reaper left the buffer undrained")
	}
}

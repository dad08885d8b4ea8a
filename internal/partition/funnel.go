package partition

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/IBM/sarama"
	"gopkg.in/tomb.v2"
)

// ErrFunnelClosed: the funnel was closed while a manager still used it.
var ErrFunnelClosed = errors.New("partition: funnel closed")

// Funnel hands out the messages of several Managers on one shared channel
// (the consumer's merged Messages()) from a few goroutines of its own
// (lanes).
//
// Without it, every Manager sends to the shared channel itself, and those
// senders contend for the channel's lock on every message: with 8
// partitions into one unbuffered channel, taking that lock (mostly
// spinning) was a fifth to a quarter of the CPU time of a hand-off. A Manager instead gives the funnel a
// batch of tracked messages (a job) and waits until it has been handed
// out; the lanes take the jobs in the order they came, one each, so the
// messages of one partition stay in offset order and the partitions take
// turns batch by batch. There are two lanes rather than one because the
// receiver would otherwise wait for the one lane after every message (and
// that lane for the receiver): with two, a message is usually waiting when
// the receiver comes back for one.
//
// The guarantees of a direct hand-off hold: a message is handed out only
// while its Manager's Fence allows it, and a Manager that stops (or loses
// its partition) gets back at once a job that no lane has started, and
// promptly one that a lane is serving, knowing how much of it was handed
// out. While the message a lane is handing out is held back (its fence is
// suspended), the jobs behind it wait: the Managers of one funnel share
// one ZooKeeper session, whose health is theirs.
//
// Safe for concurrent use. The creator calls Close once every Manager that
// uses the funnel has stopped, and only then closes the channel.
type Funnel struct {
	out  chan<- *Message
	jobs chan *job
	t    tomb.Tomb
}

// funnelLanes is how many goroutines serve the jobs (see Funnel).
const funnelLanes = 2

// funnelQueue bounds the jobs waiting for the funnel; a Manager that finds
// it full waits (or stops) like one that waits for its job.
const funnelQueue = 256

// NewFunnel starts a funnel into out; the caller must Close it.
func NewFunnel(out chan<- *Message) (*Funnel, error) {
	if out == nil {
		return nil, fmt.Errorf("%w: Funnel: nil channel", ErrConfig)
	}
	f := &Funnel{out: out, jobs: make(chan *job, funnelQueue)}
	for range funnelLanes {
		f.t.Go(f.loop)
	}
	return f, nil
}

// Close stops the funnel and blocks until its lanes have ended. It is
// idempotent. A job being served when Close is called is finished first
// (or ended by its Manager stopping); a Manager whose job was not started
// gets it back, reports ErrFunnelClosed and hands nothing more out.
func (f *Funnel) Close() error {
	f.t.Kill(nil)
	return f.t.Wait()
}

func (f *Funnel) loop() error {
	for {
		select {
		case <-f.t.Dying():
			return nil
		case j := <-f.jobs:
			if !j.state.CompareAndSwap(jobQueued, jobServing) {
				continue // withdrawn by its stopping Manager
			}
			for i, w := range j.msgs {
				if !j.m.deliver(w, f.out) {
					break
				}
				j.sent = i + 1
			}
			j.done <- struct{}{}
		}
	}
}

// A job's states.
const (
	jobQueued int32 = iota
	jobServing
	jobWithdrawn
)

// job is a batch of one Manager's tracked messages for the funnel. The
// Manager fills it and reads sent back only when the funnel is not serving
// it: after done, or after withdrawing it.
type job struct {
	m     *Manager
	msgs  []*Message // from msgsPool while the job is filled
	buf   *[]*Message
	sent  int // handed out, from the first
	state atomic.Int32
	done  chan struct{} // buffered 1: served
}

// viaFunnel hands msgs (tracked, in offset order) out through f and moves
// *next past each message handed out. It blocks until all were handed out
// or the manager halts, and returns false when it stopped short. Run
// goroutine only.
func (m *Manager) viaFunnel(f *Funnel, msgs []*sarama.ConsumerMessage, next *int64) bool {
	j := m.job
	if j == nil {
		j = &job{m: m, done: make(chan struct{}, 1)}
		m.job = j
	}
	j.buf = msgsPool.Get().(*[]*Message)
	j.msgs = (*j.buf)[:0]
	for i, msg := range msgs {
		j.msgs = append(j.msgs, m.newMessage(msg, len(msgs)-1-i))
		msgs[i] = nil // the user holds on to it, not us
	}
	j.sent = 0
	j.state.Store(jobQueued)
	all := false
	if m.await(f, j) {
		if j.sent > 0 {
			*next = j.msgs[j.sent-1].Offset + 1
		}
		all = j.sent == len(j.msgs)
	} // else withdrawn: nothing of it was handed out
	clear(j.msgs) // a lane reads no more of a withdrawn job than its state
	*j.buf = j.msgs[:0]
	msgsPool.Put(j.buf)
	j.msgs, j.buf = nil, nil
	return all
}

// msgsPool holds the slices of jobs (*[]*Message of capacity readBatch):
// shared by the managers, so that an idle partition holds none (2 KB
// each).
var msgsPool = sync.Pool{New: func() any {
	b := make([]*Message, 0, readBatch)
	return &b
}}

// await queues j and waits until the funnel has served it, or withdraws it
// when the manager halts, a control request comes (or the funnel is
// closed) before the funnel took it. It returns false when j was withdrawn.
func (m *Manager) await(f *Funnel, j *job) bool {
	closed := f.t.Dying()
	wake := m.wake()
	select {
	case f.jobs <- j:
	case <-m.halt:
		return false
	case <-wake: // a control request: hand nothing out
		return false
	case <-closed:
		m.report("deliver", ErrFunnelClosed)
		return false
	}
	select {
	case <-j.done:
		return true
	case <-m.halt:
	case <-wake:
	case <-closed:
		m.report("deliver", ErrFunnelClosed)
	}
	if j.state.CompareAndSwap(jobQueued, jobWithdrawn) {
		m.job = nil // the funnel still holds it: never reuse it
		return false
	}
	// Being served: deliver watches halt and control requests, so it ends
	// promptly; a closed funnel finishes it first.
	<-j.done
	return true
}

package partition

import (
	"github.com/zkgroup/zkgroup/internal/tracker"
	public "github.com/zkgroup/zkgroup/partition"
)

// Handout is one batch as a Manager hands it out: the public Batch, which
// its receiver gives the user (or whose messages it yields one by one
// after Pass), and what Pass needs. The guarantees of message delivery
// hold per batch: a batch is handed out only while the fence allows it,
// all its messages count toward MaxUnacked from the moment it is taken for
// delivery, and a batch not yet received when the manager stops is
// dropped whole (its messages go to the next owner).
type Handout struct {
	public.Batch
	m *Manager
	// suspended caches Fence.Suspended() for Pass (its caller only).
	suspended <-chan struct{}
	// seeks is m.seeks when the batch was made.
	seeks uint64
}

// Owner returns the Manager that handed h out.
func (h *Handout) Owner() *Manager { return h.m }

// newHandout makes the batch of msgs (tracked, in offset order, at least
// one); its messages point back at it.
func (m *Manager) newHandout(msgs []Message) *Handout {
	h := &Handout{m: m, seeks: m.seeks.Load()}
	pub.InitBatch(&h.Batch, m.topic, m.partition, msgs, m)
	return h
}

// AckBatch acks msgs[*acked:] up to offset under one lock, and moves
// *acked past them (Batch.Ack, AckUpTo). It returns AckOK if it counted
// any, AckDuplicate if all were acked already (or *acked is past offset),
// AckStale after the manager stopped (one stale ack counted per call),
// AckUnknown when none is at or below offset or they were forgotten (a
// seek since). Safe for concurrent use; never blocks on I/O.
func (m *Manager) AckBatch(msgs []*Message, acked *int, offset int64) AckResult {
	m.mu.Lock()
	if m.stopped || m.tracker == nil {
		m.mu.Unlock()
		m.countStale()
		return AckStale
	}
	m.fastOff()
	var ok, dup, unknown int
	from := *acked
	i := from
	for ; i < len(msgs) && msgs[i].Offset <= offset; i++ {
		off := msgs[i].Offset
		switch m.tracker.Ack(off) {
		case tracker.AckOK:
			ok++
			if m.abandoned != nil && m.abandoned[off] {
				delete(m.abandoned, off)
			}
		case tracker.AckDuplicate:
			dup++
		default:
			unknown++
		}
	}
	alreadyThrough := i == from && from > 0 && (from == len(msgs) || msgs[from].Offset > offset)
	*acked = i
	m.acks += uint64(ok)
	m.dupAcks += uint64(dup + unknown)
	if alreadyThrough {
		m.dupAcks++
	}
	m.mu.Unlock()
	switch {
	case ok > 0:
		select {
		case m.space <- struct{}{}:
		default:
		}
		return AckOK
	case dup > 0 || alreadyThrough:
		return AckDuplicate
	default:
		return AckUnknown
	}
}

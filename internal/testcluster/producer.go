package testcluster

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

// Producer writes Produce's messages in the background: every interval a
// batch of the next batch indexes, each batch acknowledged (acks=all)
// before the next, until Halt. It keeps one client and one producer, and
// stops at its first failed message.
type Producer struct {
	mu      sync.Mutex
	next    int
	written []Written
	err     error
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// Written is where message Index landed.
type Written struct {
	Index int
	Position
}

// StartProducer starts a Producer of topic's partitions parts from index
// from, batch messages every interval; it fails tb when no producer can be
// made, and halts the producer when tb ends (if the test did not).
func StartProducer(tb testing.TB, c *Cluster, topic string, parts int32, from, batch int, every time.Duration) *Producer {
	tb.Helper()
	client, ap, err := c.producer(topic, parts)
	if err != nil {
		tb.Fatal(err)
	}
	p := &Producer{next: from, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer client.Close()
		defer ap.Close()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			p.mu.Lock()
			from := p.next
			p.mu.Unlock()
			out, err := produceBatch(ap, topic, parts, from, batch)
			p.mu.Lock()
			for i, pos := range out.Offsets {
				p.written = append(p.written, Written{Index: i, Position: pos})
			}
			if err != nil {
				p.err = err
				p.mu.Unlock()
				return
			}
			p.next += batch
			p.mu.Unlock()
		}
	}()
	tb.Cleanup(func() { p.stop1() })
	return p
}

func (p *Producer) stop1() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

// Next is the index of the next message to write: how many were written
// since index 0 (when the producer started there).
func (p *Producer) Next() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

// Stop stops the producer (a batch under way is finished) and returns
// the index after the last message written, and the error that stopped
// it, if one did.
func (p *Producer) Stop() (int, error) {
	p.stop1()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.next, fmt.Errorf("testcluster: producer: %w", p.err)
	}
	return p.next, nil
}

// Halt is Stop that fails tb on an error.
func (p *Producer) Halt(tb testing.TB) int {
	tb.Helper()
	n, err := p.Stop()
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// Written returns where every acknowledged message landed, by index.
func (p *Producer) Written() []Written {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]Written(nil), p.written...)
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

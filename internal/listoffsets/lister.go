// Package listoffsets answers "what is the oldest or newest offset of this
// partition" on connections of its own, merging the questions that arrive
// together for one broker into one ListOffsets request.
//
// Why connections of its own: a sarama Broker holds its lock for a whole
// round trip, so on the fetching client these requests would queue behind
// the fetches of every partition the broker leads (and the fetches behind
// them), and a member starting many partitions asks for many at once.
// Why not a sarama client of its own: a client keeps the metadata of every
// topic it was asked a leader of, and refreshes it, for as long as it
// lives, so a second copy of the group's metadata would be held (about
// 140 bytes a partition) for the leaders the first already knows.
// Not API.
package listoffsets

import (
	"errors"
	"fmt"
	"sync"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/saramawire"
)

// ErrNoBlock is returned when a broker's answer leaves out a partition
// that was asked for.
var ErrNoBlock = errors.New("listoffsets: the broker's answer has no block for the partition")

// ErrClosed is returned by Offset after Close.
var ErrClosed = errors.New("listoffsets: lister closed")

// Lister merges concurrent offset queries per broker and time. It takes
// each partition's leader from a client's metadata and asks it over a
// connection of its own per broker, opened with the client's Config.
// Safe for concurrent use; it starts no goroutine of its own (the callers
// send the requests in turn; sarama's Broker runs its connection's).
// Close closes its connections; the client is the caller's to close.
type Lister struct {
	client sarama.Client

	mu      sync.Mutex
	queues  map[queueKey]*queue
	brokers map[int32]*sarama.Broker // by leader id
	closed  bool
}

type queueKey struct {
	broker int32
	time   int64
}

// queue is the questions for one broker and time: those waiting for the
// next request, and whether a caller is sending them.
type queue struct {
	sending bool
	waiting []*query
}

type query struct {
	topic     string
	partition int32
	epoch     int32 // the leader's epoch in the metadata (-1: unknown)
	broker    *sarama.Broker
	offset    int64
	err       error
	done      chan struct{} // closed once offset and err are set
	lead      chan struct{} // closed when this query's caller must send batch
	batch     []*query
}

// New returns a Lister that finds leaders through client's metadata (the
// fetching client's, which has them) and asks them over connections of
// its own.
func New(client sarama.Client) *Lister {
	return &Lister{client: client, queues: map[queueKey]*queue{}, brokers: map[int32]*sarama.Broker{}}
}

// Close closes the Lister's connections; Offset fails with ErrClosed
// from then on. Idempotent.
func (l *Lister) Close() error {
	l.mu.Lock()
	l.closed = true
	brokers := l.brokers
	l.brokers = nil
	l.mu.Unlock()
	for _, b := range brokers {
		_ = b.Close() // ErrNotConnected when never opened or failed
	}
	return nil
}

// conn returns the Lister's connection to leader, opened (connecting in
// the background) if it is not: a new one when the leader's address is
// not the one it was opened to.
func (l *Lister) conn(leader *sarama.Broker) (*sarama.Broker, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	b := l.brokers[leader.ID()]
	if b != nil && b.Addr() != leader.Addr() {
		_ = b.Close()
		b = nil
	}
	if b == nil {
		b = sarama.NewBroker(leader.Addr())
		l.brokers[leader.ID()] = b
	}
	if err := b.Open(l.client.Config()); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
		return nil, err
	}
	return b, nil
}

// Offset returns the offset at time t (sarama.OffsetOldest or
// sarama.OffsetNewest, or a timestamp in milliseconds) of a partition,
// like sarama.Client.GetOffset: after a failure it refreshes the topic's
// metadata and asks once more. The request carries the leader's epoch
// from the metadata (ListOffsets v4, Kafka 2.1): a broker whose epoch
// differs answers FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH rather than
// an offset it may no longer lead for, and the question is asked again
// after the refresh. Blocks for about one round trip to the
// partition's leader, two when a request to it is already in flight.
func (l *Lister) Offset(topic string, partition int32, t int64) (int64, error) {
	off, err := l.offset(topic, partition, t)
	if err == nil {
		return off, nil
	}
	if rerr := l.client.RefreshMetadata(topic); rerr != nil {
		return -1, fmt.Errorf("%w (then refreshing metadata: %w)", err, rerr)
	}
	return l.offset(topic, partition, t)
}

func (l *Lister) offset(topic string, partition int32, t int64) (int64, error) {
	leader, epoch, err := l.client.LeaderAndEpoch(topic, partition)
	if err != nil {
		return -1, err
	}
	broker, err := l.conn(leader)
	if err != nil {
		return -1, err
	}
	q := &query{topic: topic, partition: partition, epoch: epoch, broker: broker, done: make(chan struct{}), lead: make(chan struct{})}
	k := queueKey{leader.ID(), t}
	l.mu.Lock()
	qu := l.queues[k]
	if qu == nil {
		qu = &queue{}
		l.queues[k] = qu
	}
	qu.waiting = append(qu.waiting, q)
	if !qu.sending {
		qu.sending = true
		batch := qu.waiting
		qu.waiting = nil
		l.mu.Unlock()
		l.send(k, t, batch)
		return q.offset, q.err
	}
	l.mu.Unlock()
	select {
	case <-q.done: // a sender's batch carried it
	case <-q.lead: // it is the next sender
		l.send(k, t, q.batch)
	}
	return q.offset, q.err
}

// send asks in one request for batch (whose queries share their leader and
// time), answers each query, and hands what queued meanwhile to the first
// of those queries, whose caller then sends it: the callers do the
// sending in turn, so no caller waits for more than two round trips and
// no goroutine is started.
func (l *Lister) send(k queueKey, t int64, batch []*query) {
	ask(l.client.Config().Version, t, batch)
	l.mu.Lock()
	qu := l.queues[k]
	if len(qu.waiting) == 0 {
		delete(l.queues, k)
		l.mu.Unlock()
		return
	}
	next := qu.waiting
	qu.waiting = nil
	l.mu.Unlock()
	next[0].batch = next
	close(next[0].lead)
}

// ask asks batch's broker in one request and answers each query.
func ask(v sarama.KafkaVersion, t int64, batch []*query) {
	defer func() {
		for _, q := range batch {
			close(q.done)
		}
	}()
	req := sarama.NewOffsetRequest(v)
	for _, q := range batch {
		req.AddBlock(q.topic, q.partition, t, 1)
		if q.epoch >= 0 && req.Version >= 4 && saramawire.OffsetOK {
			saramawire.SetCurrentLeaderEpoch(req, q.topic, q.partition, q.epoch)
		}
	}
	broker := batch[0].broker
	resp, err := broker.GetAvailableOffsets(req)
	if err != nil {
		_ = broker.Close() // as sarama does: the next use reconnects
		for _, q := range batch {
			q.offset, q.err = -1, err
		}
		return
	}
	for _, q := range batch {
		q.offset, q.err = answer(resp, q.topic, q.partition)
	}
}

func answer(resp *sarama.OffsetResponse, topic string, partition int32) (int64, error) {
	b := resp.GetBlock(topic, partition)
	switch {
	case b == nil:
		return -1, fmt.Errorf("%w: %s/%d", ErrNoBlock, topic, partition)
	case !errors.Is(b.Err, sarama.ErrNoError):
		return -1, b.Err
	case len(b.Offsets) != 1:
		return -1, sarama.ErrOffsetOutOfRange
	}
	return b.Offsets[0], nil
}

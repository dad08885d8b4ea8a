package benchkit

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ValueLen is the size of the values the Producer writes.
const ValueLen = 100

// ProducedAt reads the produce time a Producer wrote into a value (zero
// when the value is too short).
func ProducedAt(v []byte) int64 {
	if len(v) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// Producer writes at a steady rate to every partition of its topics in
// turn, each value carrying its produce time (unix nanoseconds, 8 bytes
// big-endian) padded to ValueLen bytes. It is a franz-go client (leader
// acks, not idempotent, no linger: what is produced while a request is
// under way goes in the next one), which retries a record until it lands:
// sarama's AsyncProducer, used before, stopped writing to a tenth of
// 10,000 partitions for minutes (their records failing with "use of
// closed network connection") when the brokers slowed down, which left
// them silent whatever the consumers did.
type Producer struct {
	cl     *kgo.Client
	cancel context.CancelFunc // stops the pacing
	// cancelRecords cancels the records' context: Close calls it once the
	// buffered ones had 30 s to land (a record still waiting then fails).
	cancelRecords context.CancelFunc
	done          chan struct{}
	sent          atomic.Int64
	errs          atomic.Int64
	paused        atomic.Bool
	first         atomic.Value
	// maxAck: the longest a record took from its produce time to its
	// broker's ack (ns) since the last TakeMaxAck.
	maxAck atomic.Int64
}

// Topic is a topic to write to and its partition count.
type Topic struct {
	Name       string
	Partitions int32
}

// StartProducer writes rate records a second, spread evenly over every
// partition of topics, until Close or maxRun passes.
func StartProducer(addrs []string, topics []Topic, rate int, maxRun time.Duration) (*Producer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ClientID("bench-producer"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0))
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), maxRun)
	records, cancelRecords := context.WithCancel(context.Background())
	pr := &Producer{cl: cl, cancel: cancel, cancelRecords: cancelRecords, done: make(chan struct{})}
	type target struct {
		topic string
		p     int32
	}
	var targets []target
	for _, t := range topics {
		for i := int32(0); i < t.Partitions; i++ {
			targets = append(targets, target{t.Name, i})
		}
	}
	landed := func(r *kgo.Record, err error) {
		if err != nil {
			if pr.errs.Add(1) == 1 {
				pr.first.Store(err)
			}
			return
		}
		lat := time.Now().UnixNano() - ProducedAt(r.Value)
		for {
			old := pr.maxAck.Load()
			if lat <= old || pr.maxAck.CompareAndSwap(old, lat) {
				break
			}
		}
	}
	go func() {
		defer close(pr.done)
		next := 0
		Pace(ctx, rate, pr.paused.Load, func() bool {
			v := make([]byte, ValueLen)
			binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
			t := targets[next]
			next = (next + 1) % len(targets)
			// Blocks while the client buffers its most (franz-go's
			// MaxBufferedRecords), as a full input channel would.
			cl.Produce(records, &kgo.Record{Topic: t.topic, Partition: t.p, Value: v}, landed)
			pr.sent.Add(1)
			return ctx.Err() == nil
		})
	}()
	return pr, nil
}

// Pace calls send once for every record due at rate records a second,
// checking every 5 ms and never bursting more than a quarter second behind
// schedule, until ctx ends or send returns false. While paused (nil: never)
// says so, nothing is sent and nothing is owed for the pause.
func Pace(ctx context.Context, rate int, paused func() bool, send func() bool) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	var sent int64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			due := int64(now.Sub(start).Seconds() * float64(rate))
			if paused != nil && paused() {
				sent = due
				continue
			}
			if due-sent > int64(rate/4)+1 {
				sent = due - int64(rate/4) - 1
			}
			for ; sent < due; sent++ {
				if !send() {
					return
				}
			}
		}
	}
}

// SetPaused stops (true) or resumes (false) the writing; resumed, it goes
// on at the rate without catching up on the pause.
func (p *Producer) SetPaused(paused bool) { p.paused.Store(paused) }

// TakeMaxAck returns the longest a record took from its produce time to
// its broker's ack since the last call, and starts over: a long one means
// the consumers had nothing new to read for that long, whatever they did.
func (p *Producer) TakeMaxAck() time.Duration { return time.Duration(p.maxAck.Swap(0)) }

// Sent is the number of records handed to the producer so far.
func (p *Producer) Sent() int64 { return p.sent.Load() }

// Close stops writing, waits up to 30 s for what is buffered to land, and
// returns the first failure, with their count.
func (p *Producer) Close() error {
	p.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-p.done:
	case <-ctx.Done(): // a Produce waits for buffer space that does not come
	}
	err := p.cl.Flush(ctx)
	p.cancelRecords()
	<-p.done
	p.cl.Close()
	if n := p.errs.Load(); n > 0 {
		return fmt.Errorf("producer: %d records failed, first: %v", n, p.first.Load())
	}
	if err != nil {
		return fmt.Errorf("producer: flushing: %w", err)
	}
	return nil
}

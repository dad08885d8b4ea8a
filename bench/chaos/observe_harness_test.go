package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
)

// printEv is one line of a daemon's stdout sink, stamped when the runner
// read it.
type printEv struct {
	t   int64 // unix ns
	off int64
	seq int64 // the producer's sequence number from the value; -1 if unreadable
	p   int32
	inc int32
	tok int64 // the fencing_token of the line (0: none)
}

// pk names a record.
type pk struct {
	p   int32
	off int64
}

// ack is a record the producer got acknowledged.
type ack struct {
	t   int64 // unix ns of the acknowledgement
	seq int64
}

// commitEv is a committed offset seen at a time.
type commitEv struct {
	t   int64 // unix ns
	off int64
}

// collector holds everything observed during a run. Safe for concurrent
// use.
type collector struct {
	mu      sync.Mutex
	prints  []printEv
	acked   map[pk]ack
	incs    []*incInfo
	polled  map[int32][]commitEv
	notes   []string
	garbled []string

	produceErrs  atomic.Int64
	pollErrs     atomic.Int64
	polls        atomic.Int64
	firstProdErr atomic.Value
}

func newCollector() *collector {
	return &collector{acked: map[pk]ack{}, polled: map[int32][]commitEv{}}
}

func (c *collector) nextInc() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.incs = append(c.incs, nil)
	return int32(len(c.incs) - 1)
}

func (c *collector) addInc(n int32, i *incInfo) {
	c.mu.Lock()
	c.incs[n] = i
	c.mu.Unlock()
}

func (c *collector) endInc(n int32, exit string, expected bool) {
	c.mu.Lock()
	c.incs[n].End = time.Now().UnixNano()
	c.incs[n].Exit = exit
	c.incs[n].Expected = expected
	c.mu.Unlock()
}

func (c *collector) incExit(n int32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.incs[n].Exit
}

func (c *collector) addPrint(e printEv) {
	c.mu.Lock()
	c.prints = append(c.prints, e)
	c.mu.Unlock()
}

func (c *collector) garbage(inc int32, line string) {
	c.mu.Lock()
	c.garbled = append(c.garbled, fmt.Sprintf("inc %d: %.200s", inc, line))
	c.mu.Unlock()
}

func (c *collector) note(format string, args ...any) {
	c.mu.Lock()
	c.notes = append(c.notes, time.Now().UTC().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

func (c *collector) ackedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acked)
}

// unprinted counts the acked records no daemon printed yet.
func (c *collector) unprinted() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[pk]bool, len(c.prints))
	for _, e := range c.prints {
		seen[pk{e.p, e.off}] = true
	}
	n := 0
	for k := range c.acked {
		if !seen[k] {
			n++
		}
	}
	return n
}

// producer writes keyed records "s<seq>" at a fixed rate with acks=all and
// records every acknowledged partition and offset.
type producer struct {
	p      sarama.AsyncProducer
	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup
	sent   atomic.Int64
}

func startProducer(addrs []string, topic string, rate, keys int, seed uint64, col *collector) (*producer, error) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.ClientID = "chaos-producer"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Retry.Max = 30
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	cfg.Metadata.Retry.Max = 30
	p, err := sarama.NewAsyncProducer(addrs, cfg)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr := &producer{p: p, cancel: cancel, done: make(chan struct{})}
	pr.wg.Add(2)
	go func() {
		defer pr.wg.Done()
		for m := range p.Successes() {
			now := time.Now().UnixNano()
			col.mu.Lock()
			col.acked[pk{m.Partition, m.Offset}] = ack{t: now, seq: m.Metadata.(int64)}
			col.mu.Unlock()
		}
	}()
	go func() {
		defer pr.wg.Done()
		for e := range p.Errors() {
			if col.produceErrs.Add(1) == 1 {
				col.firstProdErr.Store(e.Err.Error())
			}
		}
	}()
	rng := rand.New(rand.NewPCG(seed, 0x70726f64))
	go func() {
		defer close(pr.done)
		benchkit.Pace(ctx, rate, nil, func() bool {
			seq := pr.sent.Add(1)
			m := &sarama.ProducerMessage{
				Topic:    topic,
				Key:      sarama.StringEncoder(fmt.Sprintf("k%06d", rng.IntN(keys))),
				Value:    sarama.StringEncoder(fmt.Sprintf("s%d", seq)),
				Metadata: seq,
			}
			select {
			case p.Input() <- m:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return pr, nil
}

// stop ends writing and waits for every outstanding acknowledgement.
func (pr *producer) stop() {
	pr.cancel()
	<-pr.done
	_ = pr.p.Close()
	pr.wg.Wait()
}

// poller reads the group's committed offsets from Kafka (OffsetFetch to
// the coordinator) every interval and records every change.
func poll(ctx context.Context, addrs []string, group, topic string, partitions int32, every time.Duration, col *collector) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0
	cfg.ClientID = "chaos-poller"
	cfg.Net.DialTimeout = 2 * time.Second
	cfg.Net.ReadTimeout = 3 * time.Second
	cfg.Net.WriteTimeout = 3 * time.Second
	cfg.Metadata.Retry.Max = 1
	var client sarama.Client
	last := make([]int64, partitions)
	for i := range last {
		last[i] = -2
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if client != nil {
				client.Close()
			}
			return
		case <-t.C:
		}
		if client == nil {
			cl, err := sarama.NewClient(addrs, cfg)
			if err != nil {
				col.pollErrs.Add(1)
				continue
			}
			client = cl
		}
		b, err := client.Coordinator(group)
		if err != nil {
			col.pollErrs.Add(1)
			_ = client.RefreshCoordinator(group)
			continue
		}
		req := &sarama.OffsetFetchRequest{Version: 5, ConsumerGroup: group}
		for p := int32(0); p < partitions; p++ {
			req.AddPartition(topic, p)
		}
		resp, err := b.FetchOffset(req)
		now := time.Now().UnixNano()
		if err != nil || resp.Err != sarama.ErrNoError {
			col.pollErrs.Add(1)
			_ = client.RefreshCoordinator(group)
			continue
		}
		col.polls.Add(1)
		col.mu.Lock()
		for p := int32(0); p < partitions; p++ {
			blk := resp.GetBlock(topic, p)
			if blk == nil || blk.Err != sarama.ErrNoError {
				continue
			}
			if blk.Offset != last[p] {
				last[p] = blk.Offset
				col.polled[p] = append(col.polled[p], commitEv{t: now, off: blk.Offset})
			}
		}
		col.mu.Unlock()
	}
}

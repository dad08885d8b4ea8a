package manager_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

const (
	benchParts    = 8
	benchMessages = 1_000_000
	benchValueLen = 100
)

// benchTopic is the pre-filled topic, shared by every run of the
// benchmark in this process.
var benchTopic struct {
	once sync.Once
	name string
	err  error
	runs atomic.Int64 // fresh group names
}

// prefill writes benchMessages values of benchValueLen bytes round-robin
// to benchParts partitions (replication 1) with a fast async producer:
// acks=1, no compression, big batches; then reads them once, untimed.
func prefill(b *testing.B, c *testcluster.Cluster) (string, error) {
	benchTopic.once.Do(func() {
		start := time.Now()
		name := testcluster.Name(b, "topic")
		if err := c.CreateTopic(context.Background(), name, benchParts, 1); err != nil {
			benchTopic.err = err
			return
		}
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V3_9_0_0
		cfg.ClientID = "zkgroup-bench-producer"
		cfg.Producer.RequiredAcks = sarama.WaitForLocal
		cfg.Producer.Compression = sarama.CompressionNone
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		cfg.Producer.Return.Successes = false
		cfg.Producer.Return.Errors = true
		cfg.Producer.Flush.Bytes = 512 << 10
		cfg.Producer.Flush.Messages = 10_000
		cfg.Producer.Flush.Frequency = 10 * time.Millisecond
		cfg.Producer.MaxMessageBytes = 900_000 // under the brokers' message.max.bytes
		cfg.ChannelBufferSize = 10_000
		p, err := sarama.NewAsyncProducer(c.Addrs(), cfg)
		if err != nil {
			benchTopic.err = err
			return
		}
		var errs atomic.Int64
		var first atomic.Value
		done := make(chan struct{})
		go func() {
			defer close(done)
			for e := range p.Errors() {
				if errs.Add(1) == 1 {
					first.Store(e.Err)
				}
			}
		}()
		value := make([]byte, benchValueLen)
		for i := range value {
			value[i] = 'a' + byte(i%26)
		}
		enc := sarama.ByteEncoder(value)
		for i := 0; i < benchMessages; i++ {
			p.Input() <- &sarama.ProducerMessage{Topic: name, Partition: int32(i % benchParts), Value: enc}
		}
		if err := p.Close(); err != nil && errs.Load() == 0 {
			benchTopic.err = err
		}
		<-done
		if n := errs.Load(); n > 0 {
			benchTopic.err = fmt.Errorf("prefill: %d messages failed, first: %v", n, first.Load())
			return
		}
		hwm, err := c.HighWaterMarks(name)
		if err != nil {
			benchTopic.err = err
			return
		}
		var sum int64
		for _, e := range hwm {
			sum += e
		}
		if sum != benchMessages {
			benchTopic.err = fmt.Errorf("prefill: %d messages in the topic, want %d", sum, benchMessages)
			return
		}
		// Read it all once, untimed, so that neither sub-benchmark pays for
		// a cold page cache or the brokers' warm-up.
		var warm passCounter
		if err := passSarama(c, name, &warm, &clock{}); err != nil || warm.total != benchMessages {
			benchTopic.err = fmt.Errorf("prefill: warm-up read %d of %d messages: %v", warm.total, benchMessages, err)
			return
		}
		benchTopic.name = name
		b.Logf("prefilled %s: %d messages of %d bytes over %d partitions in %v", name, benchMessages, benchValueLen, benchParts, time.Since(start))
	})
	return benchTopic.name, benchTopic.err
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// passCounter checks one pass: every offset of every partition exactly
// once, in order.
type passCounter struct {
	next  [benchParts]int64
	total int
	bad   int
}

func (pc *passCounter) add(p int32, off int64) {
	if p < 0 || p >= benchParts || off != pc.next[p] {
		pc.bad++
		return
	}
	pc.next[p]++
	pc.total++
}

// BenchmarkConsume reads a pre-filled topic (8 partitions, 1,000,000
// messages of 100 bytes) to its end through zkgroup (Join, Messages, Ack,
// commits; a fresh group each pass, so from the oldest offset) and through
// plain sarama partition consumers merged into one channel.
//
// Each of the b.N iterations is a pair of passes, one of each, in
// alternating order (zkgroup first, then sarama first, ...): both sides of
// a pair see the same state of the machine and the brokers, which drift
// over a run (they get faster as they warm up, and other work comes and
// goes). A pair's ratio is zkgroup's rate over sarama's; the reported
// ratio is the median of the pairs' ratios. The throughput and CPU time
// per message are those of the steady state: from the 100,000th message to
// the 900,000th (received and, for zkgroup, acked); "whole" rates run from
// the first message to the last, e2e rates from the start (Join or
// NewConsumer) to the last message; closing is not timed. Run it as
//
//	go test -run=^$ -bench=BenchmarkConsume -benchtime=10x ./manager/
func BenchmarkConsume(b *testing.B) {
	if testing.Short() {
		b.Skip("integration benchmark: skipped with -short")
	}
	c := testcluster.Shared(b)
	topic, err := prefill(b, c)
	if err != nil {
		b.Fatal(err)
	}
	sub, err := subscription.Static(topic)
	if err != nil {
		b.Fatal(err)
	}
	sides := []side{
		{name: "zkgroup", pass: func(pc *passCounter, k *clock) error { return passZkgroup(b, c, sub, pc, k) }},
		{name: "sarama", pass: func(pc *passCounter, k *clock) error { return passSarama(c, topic, pc, k) }},
	}
	var rateRatios, cpuRatios, wholeRatios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var got [2]passFigures
		for j := range sides {
			k := (j + i) % len(sides) // alternate which side goes first
			f, err := sides[k].run()
			if err != nil {
				b.Fatalf("pair %d, %s: %v", i, sides[k].name, err)
			}
			got[k] = f
			sides[k].add(f)
		}
		rateRatios = append(rateRatios, got[0].rate/got[1].rate)
		cpuRatios = append(cpuRatios, got[0].cpuPer/got[1].cpuPer)
		wholeRatios = append(wholeRatios, got[0].whole/got[1].whole)
		// Straight to stderr as it happens: the benchmark's own log keeps
		// only 10 lines, which the summary below needs.
		fmt.Fprintf(os.Stderr, "BenchmarkConsume pair %d of %d: zkgroup %.0f msgs/s %.0f cpu-ns/msg, sarama %.0f msgs/s %.0f cpu-ns/msg: throughput ratio %.3f (first to last message: %.3f)\n",
			i+1, b.N, got[0].rate, got[0].cpuPer, got[1].rate, got[1].cpuPer, rateRatios[i], wholeRatios[i])
	}
	b.StopTimer()
	for _, sd := range sides {
		b.ReportMetric(median(sd.rates), sd.name+"-msgs/s")
		b.ReportMetric(median(sd.cpus), sd.name+"-cpu-ns/msg")
		b.ReportMetric(median(sd.whole), sd.name+"-whole-msgs/s")
		b.ReportMetric(median(sd.e2e), sd.name+"-e2e-msgs/s")
		b.ReportMetric(median(sd.startup), sd.name+"-startup-ms")
	}
	b.ReportMetric(median(rateRatios), "throughput-ratio")
	b.ReportMetric(median(cpuRatios), "cpu-ratio")
	b.ReportMetric(median(wholeRatios), "whole-ratio")
	if b.N > 1 {
		b.Logf("medians over %d pairs: zkgroup %.0f msgs/s %.0f cpu-ns/msg, sarama %.0f msgs/s %.0f cpu-ns/msg; zkgroup/sarama: throughput ratio %.3f (pairs %.3f..%.3f), cpu per message ratio %.3f; first to last message: ratio %.3f; start to last message: zkgroup %.0f, sarama %.0f msgs/s",
			b.N, median(sides[0].rates), median(sides[0].cpus), median(sides[1].rates), median(sides[1].cpus),
			median(rateRatios), slices.Min(rateRatios), slices.Max(rateRatios), median(cpuRatios),
			median(wholeRatios), median(sides[0].e2e), median(sides[1].e2e))
	}
}

// side is one way of consuming the topic and its figures so far.
type side struct {
	name                             string
	pass                             func(*passCounter, *clock) error
	rates, cpus, whole, e2e, startup []float64
}

// passFigures are one pass's figures: the steady-state rate and CPU time
// per message (see windowFrom), the rate from the first message to the
// last, the rate from the start to the last message, and the time to the
// first message.
type passFigures struct{ rate, cpuPer, whole, e2e, startupMs float64 }

// run makes one pass and checks that every message came exactly once, in
// order per partition.
func (sd *side) run() (passFigures, error) {
	var pc passCounter
	var k clock
	if err := sd.pass(&pc, &k); err != nil {
		return passFigures{}, err
	}
	if pc.total != benchMessages || pc.bad != 0 {
		return passFigures{}, fmt.Errorf("%d messages in order, %d out of order or repeated; want %d, 0", pc.total, pc.bad, benchMessages)
	}
	const window = windowTo - windowFrom
	return passFigures{
		rate:      window / k.to.Sub(k.from).Seconds(),
		cpuPer:    float64((k.cpuTo - k.cpuFrom).Nanoseconds()) / window,
		whole:     float64(pc.total) / k.end.Sub(k.first).Seconds(),
		e2e:       float64(pc.total) / k.end.Sub(k.t0).Seconds(),
		startupMs: float64(k.first.Sub(k.t0).Microseconds()) / 1000,
	}, nil
}

func (sd *side) add(f passFigures) {
	sd.rates = append(sd.rates, f.rate)
	sd.cpus = append(sd.cpus, f.cpuPer)
	sd.whole = append(sd.whole, f.whole)
	sd.e2e = append(sd.e2e, f.e2e)
	sd.startup = append(sd.startup, f.startupMs)
}

// median of v (0 when empty).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// The steady-state window of a pass: from the windowFrom-th message to the
// windowTo-th. It leaves out the ramp at the start (partitions come online
// one by one: zkgroup claims each and reads its committed offset first)
// and the tail at the end (partitions run dry one by one), which the e2e
// and first-to-last rates still include.
const (
	windowFrom = benchMessages / 10
	windowTo   = benchMessages * 9 / 10
)

// clock times one pass. Not safe for concurrent use.
type clock struct {
	t0, first, from, to, end time.Time
	cpuFirst, cpuFrom, cpuTo time.Duration
	cpuEnd                   time.Duration
}

// start: Join or NewConsumer is called.
func (k *clock) start() { k.t0 = time.Now() }

// message notes that the n-th message (counting from 1) was received.
func (k *clock) message(n int) {
	switch n {
	case 1:
		k.first, k.cpuFirst = time.Now(), cpuTime()
	case windowFrom:
		k.from, k.cpuFrom = time.Now(), cpuTime()
	case windowTo:
		k.to, k.cpuTo = time.Now(), cpuTime()
	}
}

// stop: the last message was received (and acked).
func (k *clock) stop() { k.end, k.cpuEnd = time.Now(), cpuTime() }

// passZkgroup consumes the topic to its end with one zkgroup instance
// (default config: unbuffered Messages(), commits every second) and a
// fresh group, then closes it (not timed).
func passZkgroup(b *testing.B, c *testcluster.Cluster, sub *subscription.Subscription, pc *passCounter, k *clock) error {
	cfg := manager.NewConfig()
	cfg.InstanceID = "bench"
	cfg.Logger = testLogger(nil)
	group := fmt.Sprintf("bench-consume-%d-%d", time.Now().UnixNano()%1e6, benchTopic.runs.Add(1))
	k.start()
	cons, err := manager.Join(context.Background(), group, sub, c.ZooKeeperConnect(), cfg)
	if err != nil {
		return err
	}
	errsDone := make(chan struct{})
	go func() {
		defer close(errsDone)
		for err := range cons.Errors() {
			b.Logf("zkgroup: %v", err)
		}
	}()
	for m := range cons.Messages() {
		pc.add(m.Partition, m.Offset)
		cons.Ack(m)
		k.message(pc.total)
		if pc.total == benchMessages {
			break
		}
	}
	k.stop()
	err = cons.Close()
	<-errsDone
	return err
}

// passSarama consumes the topic to its end with one sarama partition
// consumer per partition, each forwarded by a goroutine into one merged
// channel, the way a user would; sarama config as zkgroup's default.
func passSarama(c *testcluster.Cluster, topic string, pc *passCounter, k *clock) error {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0
	cfg.ClientID = "zkgroup-bench-sarama"
	cfg.Consumer.Return.Errors = true
	k.start()
	consumer, err := sarama.NewConsumer(c.Addrs(), cfg)
	if err != nil {
		return err
	}
	merged := make(chan *sarama.ConsumerMessage) // unbuffered, as zkgroup's default Messages()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var pcs []sarama.PartitionConsumer
	for p := int32(0); p < benchParts; p++ {
		pcon, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			close(stop)
			for _, pcon := range pcs {
				pcon.AsyncClose()
			}
			wg.Wait()
			_ = consumer.Close()
			return err
		}
		pcs = append(pcs, pcon)
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer func() {
				for range pcon.Messages() { // serviced until AsyncClose ends it
				}
			}()
			for m := range pcon.Messages() {
				select {
				case merged <- m:
				case <-stop:
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range pcon.Errors() {
			}
		}()
	}
	for m := range merged {
		pc.add(m.Partition, m.Offset)
		k.message(pc.total)
		if pc.total == benchMessages {
			break
		}
	}
	k.stop()
	close(stop)
	for _, pcon := range pcs {
		pcon.AsyncClose()
	}
	wg.Wait()
	return consumer.Close()
}

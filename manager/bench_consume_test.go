package manager_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
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
// messages of 100 bytes) to its end through zkgroup, in its two loops
// (Each, acking message by message; Poll, acking each batch whole; Join,
// commits; a fresh group each pass, so from the oldest offset), and
// through plain sarama partition consumers merged into one channel.
//
// Each of the b.N iterations is a round of passes, one of each side, the
// order rotating from round to round (zkgroup Each first, then Poll
// first, then sarama first, ...): the sides of a round see the same state
// of the machine and the brokers, which drift over a run (they get faster
// as they warm up, and other work comes and goes). A round's ratios are
// each zkgroup side's rate over sarama's; the reported ratios are the
// medians of the rounds' ratios. The throughput and CPU time per message
// are those of the steady state: from the 100,000th message to the
// 900,000th (received and, for zkgroup, acked); "whole" rates run from
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
		{name: "zkgroup-each", pass: func(pc *passCounter, k *clock) error { return passZkgroup(b, c, sub, pc, k, readEach) }},
		{name: "zkgroup-poll", pass: func(pc *passCounter, k *clock) error { return passZkgroup(b, c, sub, pc, k, readPoll) }},
		{name: "sarama", pass: func(pc *passCounter, k *clock) error { return passSarama(c, topic, pc, k) }},
	}
	const base = 2 // sarama: the ratios' denominator
	ratios := make([]struct{ rate, cpu, whole []float64 }, base)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var got [3]passFigures
		for j := range sides {
			k := (j + i) % len(sides) // rotate which side goes first
			f, err := sides[k].run()
			if err != nil {
				b.Fatalf("round %d, %s: %v", i, sides[k].name, err)
			}
			got[k] = f
			sides[k].add(f)
		}
		line := fmt.Sprintf("BenchmarkConsume round %d of %d:", i+1, b.N)
		for k := range sides {
			line += fmt.Sprintf(" %s %.0f msgs/s %.0f cpu-ns/msg", sides[k].name, got[k].rate, got[k].cpuPer)
			if k < base {
				r := &ratios[k]
				r.rate = append(r.rate, got[k].rate/got[base].rate)
				r.cpu = append(r.cpu, got[k].cpuPer/got[base].cpuPer)
				r.whole = append(r.whole, got[k].whole/got[base].whole)
				line += fmt.Sprintf(" (throughput ratio %.3f, first to last message %.3f)", r.rate[i], r.whole[i])
			}
			line += ","
		}
		// Straight to stderr as it happens: the benchmark's own log keeps
		// only 10 lines, which the summary below needs.
		fmt.Fprintln(os.Stderr, strings.TrimSuffix(line, ","))
	}
	b.StopTimer()
	for _, sd := range sides {
		b.ReportMetric(median(sd.rates), sd.name+"-msgs/s")
		b.ReportMetric(median(sd.cpus), sd.name+"-cpu-ns/msg")
		b.ReportMetric(median(sd.whole), sd.name+"-whole-msgs/s")
		b.ReportMetric(median(sd.e2e), sd.name+"-e2e-msgs/s")
		b.ReportMetric(median(sd.startup), sd.name+"-startup-ms")
	}
	for k := range base {
		r := ratios[k]
		loop := strings.TrimPrefix(sides[k].name, "zkgroup-")
		b.ReportMetric(median(r.rate), loop+"-throughput-ratio")
		b.ReportMetric(median(r.cpu), loop+"-cpu-ratio")
		b.ReportMetric(median(r.whole), loop+"-whole-ratio")
		if b.N > 1 {
			b.Logf("medians over %d rounds: %s %.0f msgs/s %.0f cpu-ns/msg, sarama %.0f msgs/s %.0f cpu-ns/msg; %s/sarama: throughput ratio %.3f (rounds %.3f..%.3f), cpu per message ratio %.3f; first to last message: ratio %.3f; start to last message: %s %.0f, sarama %.0f msgs/s",
				b.N, sides[k].name, median(sides[k].rates), median(sides[k].cpus), median(sides[base].rates), median(sides[base].cpus),
				sides[k].name, median(r.rate), slices.Min(r.rate), slices.Max(r.rate), median(r.cpu),
				median(r.whole), sides[k].name, median(sides[k].e2e), median(sides[base].e2e))
		}
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
// (default config: commits every 5 s) and a fresh group, reading with
// read, then closes it (not timed).
func passZkgroup(b *testing.B, c *testcluster.Cluster, sub *subscription.Subscription, pc *passCounter, k *clock,
	read func(*manager.Consumer, *passCounter, *clock) error) error {
	cfg := manager.NewConfig()
	cfg.InstanceID = "bench"
	cfg.Logger = testLogger(b)
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
	err = read(cons, pc, k)
	k.stop()
	if cerr := cons.Close(); err == nil {
		err = cerr
	}
	<-errsDone
	return err
}

// readEach reads every message with Each, acking each.
func readEach(cons *manager.Consumer, pc *passCounter, k *clock) error {
	for m, err := range cons.Each(context.Background()) {
		if err != nil {
			return err
		}
		pc.add(m.Partition, m.Offset)
		m.Ack()
		k.message(pc.total)
		if pc.total == benchMessages {
			return nil
		}
	}
	return fmt.Errorf("Each ended after %d messages", pc.total)
}

// readPoll reads every message with Poll, acking each batch whole once
// its messages are counted.
func readPoll(cons *manager.Consumer, pc *passCounter, k *clock) error {
	for pc.total < benchMessages {
		b, err := cons.Poll(context.Background())
		if err != nil {
			return fmt.Errorf("after %d messages: %w", pc.total, err)
		}
		for _, m := range b.Messages {
			pc.add(m.Partition, m.Offset)
			k.message(pc.total)
		}
		b.Ack()
	}
	return nil
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
	merged := make(chan *sarama.ConsumerMessage) // unbuffered: one hand-off per message
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

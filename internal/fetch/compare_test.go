package fetch_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/partition"
)

// BenchmarkCompareSarama is run once whatever b.N (go test -run '^$'
// -bench CompareSarama -benchtime 1x ./internal/fetch/, without -race): it fills a topic of 8 partitions with FETCH_BENCH_N
// (default 1,000,000) messages of 100 B and reads it whole, alternately
// with this package and with sarama's Consumer (same fetch sizes), each
// reader filling slabs of partition.Message per hand-off as the
// partition manager does. It logs the medians over FETCH_BENCH_ROUNDS
// (default 5) rounds: start→last msgs/s and process CPU per message.
func BenchmarkCompareSarama(b *testing.B) {
	t := testing.TB(b)
	n := envInt("FETCH_BENCH_N", 1_000_000)
	rounds := envInt("FETCH_BENCH_ROUNDS", 5)
	const P = 8
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	testcluster.MustCreateTopic(t, c, topic, P, 1)
	began := time.Now()
	produceSized(t, c, topic, []int32{0, 1, 2, 3, 4, 5, 6, 7}, n/P, 100, 1000, sarama.CompressionNone)
	t.Logf("filled %d × 100 B over %d partitions in %v", n, P, time.Since(began))
	total := n / P * P

	ours := func() (time.Duration, time.Duration) {
		client := newClient(t, c)
		f, err := fetch.New(client, fetch.ConfigFromSarama(client.Config()), testLog(t))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return measureReaders(t, P, total/P, func(part int32) (func() int, func(), error) {
			p, err := f.Add(topic, part, 0)
			if err != nil {
				return nil, nil, err
			}
			read := func() int {
				recs, err := p.Take(ctx)
				if err != nil {
					t.Error(err)
					return -1
				}
				vals := make([]partition.Message, recs.Len())
				ptrs := make([]*partition.Message, recs.Len())
				i := 0
				for r := range recs.All() {
					m := &vals[i]
					m.Topic, m.Partition, m.Offset = recs.Topic, recs.Partition, r.Offset
					m.Key, m.Value, m.Headers = r.Key, r.Value, r.Headers
					m.Timestamp, m.BlockTimestamp = r.Timestamp, r.BlockTimestamp
					ptrs[i] = m
					i++
				}
				return len(ptrs)
			}
			return read, func() {}, nil
		})
	}
	viaSarama := func() (time.Duration, time.Duration) {
		client := newClient(t, c)
		cons, err := sarama.NewConsumerFromClient(client)
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		return measureReaders(t, P, total/P, func(part int32) (func() int, func(), error) {
			pc, err := cons.ConsumePartition(topic, part, 0)
			if err != nil {
				return nil, nil, err
			}
			buf := make([]*sarama.ConsumerMessage, 0, 256)
			read := func() int {
				buf = append(buf[:0], <-pc.Messages())
			more:
				for len(buf) < cap(buf) {
					select {
					case m := <-pc.Messages():
						buf = append(buf, m)
					default:
						break more
					}
				}
				vals := make([]partition.Message, len(buf))
				ptrs := make([]*partition.Message, len(buf))
				for i, msg := range buf {
					m := &vals[i]
					m.Topic, m.Partition, m.Offset = msg.Topic, msg.Partition, msg.Offset
					m.Key, m.Value, m.Headers = msg.Key, msg.Value, msg.Headers
					m.Timestamp, m.BlockTimestamp = msg.Timestamp, msg.BlockTimestamp
					ptrs[i] = m
				}
				return len(ptrs)
			}
			return read, func() { pc.Close() }, nil
		})
	}
	var oursWall, oursCPU, sarWall, sarCPU []float64
	for round := range rounds {
		w, c := ours()
		oursWall = append(oursWall, float64(total)/w.Seconds())
		oursCPU = append(oursCPU, float64(c.Nanoseconds())/float64(total))
		w2, c2 := viaSarama()
		sarWall = append(sarWall, float64(total)/w2.Seconds())
		sarCPU = append(sarCPU, float64(c2.Nanoseconds())/float64(total))
		t.Logf("round %d: fetch %v (cpu %v), sarama %v (cpu %v)", round, w, c, w2, c2)
	}
	t.Logf("fetch:  median %.0f msgs/s, %.0f ns CPU/msg (rounds %v / %v)", median(oursWall), median(oursCPU), fmtAll(oursWall), fmtAll(oursCPU))
	t.Logf("sarama: median %.0f msgs/s, %.0f ns CPU/msg (rounds %v / %v)", median(sarWall), median(sarCPU), fmtAll(sarWall), fmtAll(sarCPU))
}

// measureReaders measures reading per records of each of P partitions, one
// goroutine each: open(part) gives a reader (read returns the records of
// one hand-off, negative on failure) and what ends it.
func measureReaders(t testing.TB, P int32, per int, open func(part int32) (read func() int, done func(), err error)) (wall, cpu time.Duration) {
	return measure(func() {
		var wg sync.WaitGroup
		for part := range P {
			read, done, err := open(part)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				defer done()
				for got := 0; got < per; {
					n := read()
					if n < 0 {
						return
					}
					got += n
				}
			})
		}
		wg.Wait()
	})
}

// measure runs f and returns its wall time and the process's CPU time
// (user + system) over it.
func measure(f func()) (wall, cpu time.Duration) {
	before := cpuTime()
	start := time.Now()
	f()
	return time.Since(start), cpuTime() - before
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func fmtAll(xs []float64) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

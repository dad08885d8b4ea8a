package sink

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/manager"
)

// benchPartitions is how many partitions' workers deliver at once in the
// benchmarks, each its share of b.N messages in order.
const benchPartitions = 8

// benchMessages returns n messages of partition p with 100-byte values.
func benchMessages(p, n int) []*manager.Message {
	out := make([]*manager.Message, n)
	ts := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := range out {
		out[i] = &manager.Message{Topic: "bench", Partition: int32(p), Offset: int64(i),
			Key: []byte(fmt.Sprintf("key-%04d", i%10000)), Value: bytes.Repeat([]byte{'a' + byte(i%26)}, 100), Timestamp: ts}
	}
	return out
}

// cpuTime returns the CPU time (user and system) this process and its
// waited-for children used so far.
func cpuTime(b *testing.B) time.Duration {
	var sum time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			b.Fatal(err)
		}
		sum += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return sum
}

// runPartitions delivers b.N messages through s from benchPartitions
// goroutines, in batches of up to batch messages when s is a BatchSink
// (one at a time otherwise), and reports msgs/s and the CPU time per
// message of the whole process (the endpoint's included) and of the
// commands it ran: on a loaded machine the rate drops, the CPU per
// message much less.
func runPartitions(b *testing.B, s Sink, batch int) {
	b.Helper()
	share := (b.N + benchPartitions - 1) / benchPartitions
	msgs := make([][]*manager.Message, benchPartitions)
	for p := range msgs {
		msgs[p] = benchMessages(p, share)
	}
	bs, batched := s.(BatchSink)
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime(b)
	var wg sync.WaitGroup
	for p := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms := msgs[p]
			for len(ms) > 0 {
				var err error
				if batched {
					n := min(batch, len(ms))
					err, ms = bs.DeliverBatch(context.Background(), ms[:n]), ms[n:]
				} else {
					err, ms = s.Deliver(context.Background(), ms[0]), ms[1:]
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	n := float64(share * benchPartitions)
	b.ReportMetric(n/time.Since(start).Seconds(), "msgs/s")
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/n, "cpu-µs/msg")
}

// BenchmarkHTTP: per-message and batch mode (batches of the default 500)
// against a local endpoint that counts the messages it got, answering at
// once or after 1ms; 8 partitions, the default 8 requests in flight.
//
//	go test -run '^$' -bench 'HTTP|Exec' -benchtime 3s ./cmd/zkgroup/internal/sink
func BenchmarkHTTP(b *testing.B) {
	for _, delay := range []time.Duration{0, time.Millisecond} {
		for _, mode := range []string{ModeMessage, ModeBatch} {
			b.Run(fmt.Sprintf("delay=%v/mode=%s", delay, mode), func(b *testing.B) {
				var got atomic.Int64
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					if r.Header.Get("Content-Type") == ContentTypeNDJSON {
						got.Add(int64(bytes.Count(body, []byte{'\n'})))
					} else {
						got.Add(1)
					}
					if delay > 0 {
						time.Sleep(delay) // the endpoint's own latency
					}
				}))
				defer srv.Close()
				s, err := NewHTTPSink(HTTPConfig{URL: srv.URL, Timeout: 10 * time.Second, Mode: mode,
					Batch: BatchLimits{MaxMessages: 500, MaxBytes: 512 << 10, Linger: 5 * time.Millisecond}})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				runPartitions(b, s, 500)
				if n := got.Load(); n < int64(b.N) {
					b.Fatalf("the endpoint counted %d messages of %d", n, b.N)
				}
			})
		}
	}
}

// BenchmarkExec: per-message and batch mode (batches of the default 1000)
// to `sh -c 'cat > /dev/null'`; 8 partitions.
func BenchmarkExec(b *testing.B) {
	for _, mode := range []string{ModeMessage, ModeBatch} {
		b.Run("mode="+mode, func(b *testing.B) {
			s, err := NewExecSink(ExecConfig{Command: []string{"/bin/sh", "-c", "cat > /dev/null"}, Timeout: 30 * time.Second,
				Env: []string{"PATH=/usr/bin:/bin"}, Mode: mode, Batch: BatchLimits{MaxMessages: 1000, MaxBytes: 1 << 20, Linger: 10 * time.Millisecond}})
			if err != nil {
				b.Fatal(err)
			}
			runPartitions(b, s, 1000)
		})
	}
}

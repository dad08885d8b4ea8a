package partition

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

const hotParts = 8

// BenchmarkHotPath compares the managers' hot path (8 partitions, a fence
// each, on one unbuffered batch channel, every message passed and acked
// by the receiver) with plain forwarders of the same fetch (a goroutine a
// partition that polls its Fetch, waits on Ready, and sends each record,
// in a Message made beforehand, on one channel with a select on a done
// channel, as a user of fetch.Partition would write it); b.N is the
// number of messages. Both take the fake fetcher's shares of 256 records
// (feedsOf), made beforehand: what is measured is the consumer's side of
// the fetch. It reports process CPU time per message besides the wall
// time. On a busy machine compare medians of interleaved runs:
//
//	go test -c -o /tmp/p.test ./internal/partition/
//	/tmp/p.test -test.run='^$' -test.bench=HotPath -test.benchtime=1000000x -test.count=5
func BenchmarkHotPath(b *testing.B) {
	for _, mode := range []string{"manager", "plain"} {
		b.Run(mode, func(b *testing.B) {
			per := b.N/hotParts + 1
			total := per * hotParts
			out := make(chan *Message)
			bch := make(chan *Handout)
			feeds := feedsOf(hotParts, per)
			var stop func()
			c0 := cpuNow()
			b.ResetTimer()
			if mode == "manager" {
				// On one batch channel, as in the consumer's merged mode.
				var ms []*Manager
				store := &memStore{committed: map[int32]int64{}}
				committer, err := NewCommitter(store, NewConfig(), nil)
				if err != nil {
					b.Fatal(err)
				}
				for p := int32(0); p < hotParts; p++ {
					store.committed[p] = 0
				}
				for p := int32(0); p < hotParts; p++ {
					// Each claim has channels of its own, as in the consumer.
					fence := newFence()
					m, err := start(Params{Topic: "t", Partition: p, Client: noResolver{}, Fetcher: feeds,
						Store: store, Committer: committer, Fence: fence, Batches: bch, Config: NewConfig()})
					if err != nil {
						b.Fatal(err)
					}
					ms = append(ms, m)
				}
				stop = func() {
					for _, m := range ms {
						_ = m.Stop(false)
					}
					_ = committer.Close()
				}
			} else {
				done := make(chan struct{})
				var wg sync.WaitGroup
				var fps []Fetch
				wrapped := make([][]Message, hotParts) // no allocation per message
				for p := range wrapped {
					wrapped[p] = make([]Message, per)
					for i := range wrapped[p] {
						wrapped[p][i] = Message{Topic: "t", Partition: int32(p), Offset: int64(i)}
					}
				}
				for p := int32(0); p < hotParts; p++ {
					fp, err := feeds.Add("t", p, 0)
					if err != nil {
						b.Fatal(err)
					}
					w := wrapped[p]
					fps = append(fps, fp)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							recs, err := fp.Poll()
							if err != nil {
								return
							}
							if recs == nil {
								select {
								case <-fp.Ready():
									continue
								case <-done:
									return
								}
							}
							for r := range recs.All() {
								select {
								case out <- &w[r.Offset]:
								case <-done:
									return
								}
							}
						}
					}()
				}
				stop = func() {
					close(done)
					wg.Wait()
					for _, fp := range fps {
						fp.Close()
					}
				}
			}
			var next [hotParts]int64
			check := func(m *Message) {
				if m.Offset != next[m.Partition] {
					b.Fatalf("partition %d: offset %d, want %d", m.Partition, m.Offset, next[m.Partition])
				}
				next[m.Partition]++
			}
			if mode == "manager" {
				ctx := context.Background()
				for i := 0; i < total; {
					bt := <-bch
					for j, m := range bt.Messages {
						if bt.Pass(ctx, j) != PassOK {
							b.Fatal("a batch was dropped")
						}
						check(m)
						m.Ack()
					}
					i += bt.Len()
				}
			} else {
				for i := 0; i < total; i++ {
					check(<-out)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuNow()-c0)/float64(total), "cpu-ns/msg")
			stop()
		})
	}
}

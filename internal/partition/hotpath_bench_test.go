package partition

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// feedPC is a sarama.PartitionConsumer fed by a goroutine the way sarama's
// responseFeeder feeds one: message by message into a buffered channel,
// with a select that also watches closing and a ticker.
type feedPC struct {
	msgs  chan *sarama.ConsumerMessage
	errs  chan *sarama.ConsumerError
	dying chan struct{}
	once  sync.Once
}

// feedMessages builds n messages of partition p from offset from.
func feedMessages(topic string, p int32, from int64, n int) []sarama.ConsumerMessage {
	batch := make([]sarama.ConsumerMessage, n)
	for i := range batch {
		m := &batch[i]
		m.Topic, m.Partition, m.Offset = topic, p, from+int64(i)
	}
	return batch
}

// feedsOf builds per messages from offset 0 for each of parts partitions.
func feedsOf(parts, per int) [][]sarama.ConsumerMessage {
	feeds := make([][]sarama.ConsumerMessage, parts)
	for p := range feeds {
		feeds[p] = feedMessages("t", int32(p), 0, per)
	}
	return feeds
}

func newFeedPC(batch []sarama.ConsumerMessage) *feedPC {
	pc := &feedPC{msgs: make(chan *sarama.ConsumerMessage, 256), errs: make(chan *sarama.ConsumerError, 1), dying: make(chan struct{})}
	go func() {
		defer close(pc.errs)
		defer close(pc.msgs)
		tick := time.NewTicker(time.Hour)
		defer tick.Stop()
		for i := range batch {
			m := &batch[i]
			select {
			case <-pc.dying:
				return
			case pc.msgs <- m:
			case <-tick.C:
			}
		}
		<-pc.dying
	}()
	return pc
}

func (pc *feedPC) AsyncClose()                              { pc.once.Do(func() { close(pc.dying) }) }
func (pc *feedPC) Close() error                             { pc.AsyncClose(); return nil }
func (pc *feedPC) Messages() <-chan *sarama.ConsumerMessage { return pc.msgs }
func (pc *feedPC) Errors() <-chan *sarama.ConsumerError     { return pc.errs }
func (pc *feedPC) HighWaterMarkOffset() int64               { return 0 }
func (pc *feedPC) Pause()                                   {}
func (pc *feedPC) Resume()                                  {}
func (pc *feedPC) IsPaused() bool                           { return false }

// feedConsumer hands out feedPCs of prebuilt messages.
type feedConsumer struct{ batches [][]sarama.ConsumerMessage }

func (c feedConsumer) Topics() ([]string, error)                  { return nil, nil }
func (c feedConsumer) Partitions(string) ([]int32, error)         { return nil, nil }
func (c feedConsumer) HighWaterMarks() map[string]map[int32]int64 { return nil }
func (c feedConsumer) Close() error                               { return nil }
func (c feedConsumer) Pause(map[string][]int32)                   {}
func (c feedConsumer) Resume(map[string][]int32)                  {}
func (c feedConsumer) PauseAll()                                  {}
func (c feedConsumer) ResumeAll()                                 {}
func (c feedConsumer) ConsumePartition(t string, p int32, off int64) (sarama.PartitionConsumer, error) {
	return newFeedPC(c.batches[p]), nil
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

const hotParts = 8

// BenchmarkHotPath compares the managers' hot path (8 partitions, a fence
// each, on one unbuffered batch channel, every message passed and acked
// by the receiver) with plain forwarders of the same feeders (a select on the
// channel and a done channel, as a user would write it); b.N is the number
// of messages. It reports process CPU time per message besides the wall
// time. On a busy machine compare medians of interleaved runs:
//
//	go test -c -o /tmp/p.test ./partition/
//	for i in 1 2 3 4 5 6; do /tmp/p.test -test.run='^$' -test.bench=HotPath -test.benchtime=1000000x; done
func BenchmarkHotPath(b *testing.B) {
	for _, mode := range []string{"manager", "plain"} {
		b.Run(mode, func(b *testing.B) {
			per := b.N/hotParts + 1
			total := per * hotParts
			out := make(chan *Message)
			bch := make(chan *Batch)
			batches := feedsOf(hotParts, per)
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
					m, err := Start(Params{Topic: "t", Partition: p, Client: noResolver{}, Consumer: feedConsumer{batches: batches},
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
				var pcs []*feedPC
				wrapped := make([][]Message, hotParts) // like sarama's side: no allocation per message
				for p := range wrapped {
					wrapped[p] = make([]Message, per)
					for i := range wrapped[p] {
						wrapped[p][i].fill(&batches[p][i], nil)
					}
				}
				for p := int32(0); p < hotParts; p++ {
					pc := newFeedPC(batches[p])
					w := wrapped[p]
					pcs = append(pcs, pc)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for m := range pc.Messages() {
							select {
							case out <- &w[m.Offset]:
							case <-done:
								return
							}
						}
					}()
				}
				stop = func() {
					close(done)
					for _, pc := range pcs {
						pc.AsyncClose()
					}
					wg.Wait()
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

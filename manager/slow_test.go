package manager_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// TestSlowPartitionDoesNotStall: one partition whose messages are never
// acked (merged loop) or whose stream is never read (per-partition loop)
// does not hold the others back: they are read to the end while it sits
// at its bound (MaxUnacked handed out, or nothing taken). Its messages
// are then read on their turn, nothing lost.
func TestSlowPartitionDoesNotStall(t *testing.T) {
	c := testcluster.Shared(t)
	const parts, per, maxUnacked = 4, 600, 50
	t.Run("merged", func(t *testing.T) {
		topic, group, sub := newTopic(t, c, parts)
		testcluster.MustProduce(t, c, topic, parts, 0, per*parts)
		cfg := apiConfig(t)
		cfg.Partition.MaxUnacked = maxUnacked
		cons := mustJoin(t, c, group, sub, cfg)
		defer cons.Close()
		got := map[int32]int{}
		var held []*manager.Message
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		for m, err := range cons.Each(ctx) {
			if err != nil {
				t.Fatalf("others read %v: %v", got, err)
			}
			got[m.Partition]++
			if m.Partition == 0 {
				held = append(held, m) // the slow one: never acked (yet)
			} else {
				cons.Ack(m)
			}
			if got[1] == per && got[2] == per && got[3] == per {
				break
			}
		}
		if got[0] > maxUnacked {
			t.Errorf("partition 0 handed out %d messages with none acked; MaxUnacked is %d", got[0], maxUnacked)
		}
		for _, m := range held {
			cons.Ack(m)
		}
		for got[0] < per {
			m := mustNext(t, cons.Each, 30*time.Second)
			if m.Partition != 0 {
				t.Fatalf("a message of partition %d after the others were read to the end", m.Partition)
			}
			got[0]++
			cons.Ack(m)
		}
	})
	t.Run("partitions", func(t *testing.T) {
		topic, group, sub := newTopic(t, c, parts)
		testcluster.MustProduce(t, c, topic, parts, 0, per*parts)
		cfg := apiConfig(t)
		cfg.Partition.MaxUnacked = maxUnacked
		cfg.Mode = manager.ModePartitions
		cons := mustJoin(t, c, group, sub, cfg)
		defer cons.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		var mu sync.Mutex
		got := map[int32]int{}
		slow := make(chan *manager.PartitionStream, 1)
		streams := 0
		for ps, err := range cons.EachPartition(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			streams++
			if ps.Partition() == 0 {
				slow <- ps // not read until the others are done
			} else {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for m, err := range ps.Each(ctx) {
						if err != nil {
							t.Errorf("partition %d: %v", ps.Partition(), err)
							return
						}
						m.Ack()
						mu.Lock()
						got[m.Partition]++
						n := got[m.Partition]
						mu.Unlock()
						if n == per {
							return
						}
					}
				}()
			}
			if streams == parts {
				break
			}
		}
		wg.Wait()
		for p := int32(1); p < parts; p++ {
			if got[p] != per {
				t.Fatalf("partition %d: %d of %d read while partition 0 was not", p, got[p], per)
			}
		}
		ps := <-slow
		n := 0
		for m, err := range ps.Each(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			m.Ack()
			if n++; n == per {
				break
			}
		}
		if n != per {
			t.Fatalf("partition 0: %d of %d read on its turn", n, per)
		}
	})
}

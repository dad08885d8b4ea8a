package scale

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// warmUp reads every partition of topic with plain sarama partition
// consumers until the time from produce to consume has stayed under
// 250 ms for 15 s in a row, or timeout passes. A freshly created topic of
// many partitions is not steady at first: on this cluster, produce and
// fetch stalled for about 7 s some 8–15 s after creating 1,000
// partitions, whoever was reading (seen with plain partition consumers,
// no group at all). Without the warm-up, the side that ran first measured
// that stall: its members' kept partitions paused for up to 9 s.
func warmUp(cl *testcluster.Cluster, topics []benchkit.Topic, timeout time.Duration) error {
	type tp struct {
		topic string
		p     int32
	}
	var all []tp
	for _, t := range topics {
		for p := range t.Partitions {
			all = append(all, tp{t.Name, p})
		}
	}
	partitions := len(all)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.ClientID = "bench-warmup"
	c, err := sarama.NewConsumer(cl.Addrs(), cfg)
	if err != nil {
		return fmt.Errorf("warm-up consumer: %w", err)
	}
	defer c.Close()
	var maxLat atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	pcs := make([]sarama.PartitionConsumer, partitions)
	defer func() {
		for _, pc := range pcs {
			if pc != nil {
				pc.AsyncClose()
			}
		}
	}()
	var mu sync.Mutex
	var firstErr error
	var starters sync.WaitGroup
	next := atomic.Int32{}
	for range 16 {
		starters.Go(func() {
			for p := next.Add(1) - 1; int(p) < partitions; p = next.Add(1) - 1 {
				pc, err := c.ConsumePartition(all[p].topic, all[p].p, sarama.OffsetNewest)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("warm-up: %s/%d: %w", all[p].topic, all[p].p, err)
				}
				pcs[p] = pc
				mu.Unlock()
			}
		})
	}
	starters.Wait()
	for _, pc := range pcs {
		if pc == nil {
			continue
		}
		wg.Go(func() {
			for m := range pc.Messages() {
				lat := time.Now().UnixNano() - benchkit.ProducedAt(m.Value)
				for o := maxLat.Load(); lat > o && !maxLat.CompareAndSwap(o, lat); o = maxLat.Load() {
				}
			}
		})
	}
	if firstErr != nil {
		return firstErr
	}
	start, steadySince := time.Now(), time.Now()
	var stalls []string
	for time.Since(steadySince) < 15*time.Second {
		if time.Since(start) > timeout {
			return fmt.Errorf("warm-up: produce to consume not steady under 250 ms for 15 s within %v", timeout)
		}
		time.Sleep(250 * time.Millisecond)
		if lat := time.Duration(maxLat.Swap(0)); lat >= 250*time.Millisecond {
			steadySince = time.Now()
			stalls = append(stalls, fmt.Sprintf("%.0f ms at +%.1f s", float64(lat.Milliseconds()), time.Since(start).Seconds()))
		}
	}
	if len(stalls) > 8 {
		stalls = append(stalls[:8], "...")
	}
	benchkit.Say("warm-up: produce to consume steady after %.1f s (slower than 250 ms: %v)", time.Since(start).Seconds(), stalls)
	return nil
}

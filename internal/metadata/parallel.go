package metadata

import "sync"

// readWorkers bounds the concurrent ZooKeeper reads of one refresh (the
// reads that set a watch go one per request, so that go-zookeeper
// registers the watch). Not more: at 10,000 partitions over 100 topics ×
// 50 members, 64 doubled the owner nodes the members read per join
// (70,000-96,000 in four runs against 31,000-36,000 in two at 8) and
// slowed the join phase: every member's refreshes hit the same server as
// the group's rebalance reads.
const readWorkers = 8

// forEach calls fn(i) for every i in [0, n) on up to workers goroutines and
// returns when all calls have returned. Once stop reports true no further
// calls start. It reports which indexes ran.
func forEach(n, workers int, stop func() bool, fn func(i int)) []bool {
	ran := make([]bool, n)
	if n == 0 {
		return ran
	}
	workers = max(1, min(workers, n))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
				ran[i] = true
			}
		}()
	}
	for i := 0; i < n && !stop(); i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return ran
}

package metadata

import "sync"

// readWorkers bounds the concurrent ZooKeeper reads of one refresh: the
// reads that set a watch go one per request (go-zookeeper registers the
// watch), pipelined on the session's connection, as many at a time as
// zkconn's single reads. A joining member reads every subscribed topic so:
// on a busy ensemble each round trip waits in the server's queue behind
// the group's rebalance reads, so fewer at a time means more waits (100
// topics at 8 a time: 13).
const readWorkers = 64

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

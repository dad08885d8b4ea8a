package metadata

import "sync"

// readWorkers bounds the concurrent ZooKeeper reads of one refresh.
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

package manager

import (
	"os"
	"syscall"
	"testing"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// BenchmarkClaimLease is one claim.Lease on a healthy claim: the fence
// check Batch.Pass makes before each message it lets through. It needs a
// ZooKeeper: the shared test cluster, or the one whose folder
// ZKGROUP_BENCH_CLUSTER names (started by zkcluster up).
func BenchmarkClaimLease(b *testing.B) {
	var c *testcluster.Cluster
	if dir := os.Getenv("ZKGROUP_BENCH_CLUSTER"); dir != "" {
		st, err := testcluster.ReadState(dir)
		if err != nil {
			b.Fatal(err)
		}
		c = testcluster.Attach(st)
	} else {
		c = testcluster.Shared(b)
	}
	s := dialSession(b, c)
	defer s.Close()
	cl := claimOn(b, s, testcluster.Name(b, "g"), 0)
	defer func() { _ = cl.release() }()
	c0 := cpuTimeNs()
	for b.Loop() {
		if _, ok := cl.Lease(); !ok {
			b.Fatal("no lease")
		}
	}
	b.ReportMetric(float64(cpuTimeNs()-c0)/float64(b.N), "cpu-ns/op")
}

// cpuTimeNs is the process's user+system CPU time in ns: on a shared
// machine, CPU time per op is steadier than wall time per op.
func cpuTimeNs() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

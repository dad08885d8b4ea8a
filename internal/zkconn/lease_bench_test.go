package zkconn

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// leaseSession is a Session whose lease holds (established, answered
// just now), without a connection: enough for Lease.
func leaseSession(timeout time.Duration) *Session {
	s := &Session{cfg: Config{SessionTimeout: timeout}, base: time.Now(),
		lastAnswered: &atomic.Int64{}, negotiated: &atomic.Int64{}, dialed: &atomic.Int64{}}
	s.live.Store(0x1234)
	s.lastAnswered.Store(s.now())
	return s
}

// BenchmarkLease is one Session.Lease, as a partition manager calls it
// before each message it hands out.
func BenchmarkLease(b *testing.B) {
	s := leaseSession(time.Hour)
	c0 := cpuTime()
	for b.Loop() {
		if _, _, ok := s.Lease(); !ok {
			b.Fatal("no lease")
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+system CPU time in ns: on a shared
// machine, CPU time per op is steadier than wall time per op.
func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

package scale

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/subscription"
)

// scaleResult is one run of one side of BenchmarkScale.
type scaleResult struct {
	side                 string
	failed               string // why the run stopped early, if it did
	joinFlow, leaveFlow  flowResult
	leaveSkipped         bool
	zkJoin, zkSteady     int64
	zkLeave, zkFinal     int64
	movesJoin, movesLeav int64
	claimsJoin           int64
	claimsLeave          int64
	join, steady, leave  window
	goroutines, gorBase  int
	rss, rssBase         int64
	rssIdle              int64 // at the end of the idle window (collected before it)
	heap, heapBase       int64
	joinCalls            []time.Duration
	closes               []time.Duration
	closesPending        int
	finalClose           time.Duration
	pauseJoin            map[int]time.Duration
	pauseLeave           map[int]time.Duration
	// The longest a record of a kept partition waited in the log: a pause
	// with short waits was the producer's (see part.wMaxWait).
	waitJoin, waitLeave map[int]time.Duration
	// The producer's longest produce-to-ack over the same windows.
	ackJoin, ackLeave time.Duration
	errs              string
	msgs, foreign     int64
	zxids             [5]int64 // marks: before the joins, after the join phase, the steady window, the leave phase, the last close
	group             string
	// The members' ZooKeeper requests (zkgroup only, through the counting
	// proxy) per phase.
	zkqJoin, zkqSteady, zkqIdle, zkqLeave, zkqFinal zkCounts
	// The idle window (production paused, every member in) and its
	// baseline before the first join, same length: process CPU time,
	// requests, goroutines.
	idle              window
	idleCPU, idleBase time.Duration
	idleGC            benchkit.GCWork
	idleGoroutines    int
	rebalances        uint64 // zkgroup: Stats().Rebalances summed over members at the end of the steady window
}

// BenchmarkScale: one topic of -partitions partitions (default 1,000) on 3
// brokers, -members members (default 10) of one group in this process
// joining -every (1 s) apart and then leaving one by one -every apart, while
// a producer writes -rate records/s (3,000) over every partition. Each side
// (zkgroup, sarama's ConsumerGroup) runs once per round with a fresh group,
// alternating which goes first. See ../README.md.
//
//	go test -run='^$' -bench=BenchmarkScale -benchtime=1x -timeout=60m ./scale/
func BenchmarkScale(b *testing.B) {
	P, M := *flagPartitions, *flagMembers
	if M < 2 || P < 1 {
		b.Fatalf("-members %d must be at least 2 and -partitions %d at least 1", M, P)
	}
	sds := sides(b)
	T := *flagTopics
	cl, topics, sub, zx, zl, prod, done := setUpTopics(b, "scale", P, T, *flagRate)
	defer done()
	zp, err := newZKProxy(cl.ZooKeeperAddrs()[0])
	if err != nil {
		b.Fatal(err)
	}
	defer zp.Close()
	benchkit.Say("BenchmarkScale: %d topic(s) %s..: %d partitions (%d each), replication %d, %d brokers; %d members joining %v apart, then leaving %v apart; %d records/s; zkgroup strategy %q, sarama strategy %s; %d round(s); idle window %v; load average %s",
		T, topics[0], P, P/T, *flagReplication, len(cl.Addrs()), M, *flagEvery, *flagEvery, *flagRate, zkStrategyName(), *flagSaramaStrategy, *flagRounds, *flagIdle, benchkit.LoadAvg())
	su := scaleSetup{cl: cl, topics: topics, sub: sub, zx: zx, prod: prod, zp: zp}
	results := runRounds(b, sds, *flagRounds, 3*time.Second, func(sd side, r int) scaleResult {
		res := runScale(su, sd, r)
		printScale(cl, zl, r, res)
		return res
	})
	summarizeScale(b, sds, results)
	benchkit.Say("producer: %d records sent", prod.Sent())
}

func zkStrategyName() string {
	if *flagZkStrategy == "" {
		return "default"
	}
	return *flagZkStrategy
}

func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}

// scaleSetup is what every run of BenchmarkScale shares.
type scaleSetup struct {
	cl     *testcluster.Cluster
	topics []string
	sub    *subscription.Subscription
	zx     *benchkit.Zxids
	prod   *benchkit.Producer
	zp     *zkProxy // zkgroup members' ZooKeeper, counted
}

// idleWindow pauses the producer, lets what is in flight drain, collects
// the garbage of what came before, and returns the process's CPU time
// over d, the requests of req and the runtime's allocations and
// collections in it.
// With $ZKGROUP_BENCH_IDLE_CPU set, the window is profiled into
// profile.pprof there (BenchmarkScale: idle-<side>-r<round> and, for the
// baseline window, idlebase-<side>-r<round>); not with $ZKGROUP_BENCH_CPU
// set too (one CPU profile at a time).
func idleWindow(prod *benchkit.Producer, req *benchkit.Requests, d time.Duration, profile string) (cpu time.Duration, w window, gc benchkit.GCWork) {
	prod.SetPaused(true)
	defer prod.SetPaused(false)
	time.Sleep(2 * time.Second)
	settleGC()
	stop := func() {}
	if profile != "" {
		stop = diagnostic("ZKGROUP_BENCH_IDLE_CPU", profile+".pprof", "idle cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
	}
	c0, r0, t0, g0 := benchkit.CPUTime(), req.Snapshot(), time.Now(), benchkit.ReadGCWork()
	time.Sleep(d)
	c1, r1, t1, g1 := benchkit.CPUTime(), req.Snapshot(), time.Now(), benchkit.ReadGCWork()
	stop()
	return c1 - c0, window{"idle", t1.Sub(t0), r1.Sub(r0)}, g1.Sub(g0)
}

// settleGC collects before an idle window and returns the freed memory
// to the system, so that neither the collection the phase before it
// (joins, a flowing topic) made due nor the scavenger's returning of what
// that freed runs, by chance, inside the window of one side and not the
// other's: the members share this process's heap, where each member's
// own process would collect its own small heap. (The scavenger's madvise
// calls were 30 ms of one side's 720 ms of samples in a 60 s window.)
// Collections the idle members' own allocations cause in the window still
// count; the window reports them.
func settleGC() {
	debug.FreeOSMemory()
}

func runScale(su scaleSetup, sd side, round int) (res scaleResult) {
	P, M, every := *flagPartitions, *flagMembers, *flagEvery
	cl, zx, zp := su.cl, su.zx, su.zp
	env := &runEnv{c: cl, topic: su.topics[0], sub: su.sub, tr: newTracker(P), req: &benchkit.Requests{},
		group:     fmt.Sprintf("bench-scale-%s-%d-%d", sd.name, round, time.Now().UnixNano()%1e9),
		zkConnect: zp.Addr() + cl.Chroot()}
	if !*flagZKProxy {
		env.zkConnect = cl.ZooKeeperAddrs()[0] + cl.Chroot()
	}
	if len(su.topics) > 1 {
		env.setTopics(su.topics, P/len(su.topics))
	}
	res.side, res.group = sd.name, env.group
	benchkit.Say("-- round %d, %s: group %s; load average %s", round+1, sd.name, env.group, benchkit.LoadAvg())
	stopProfile := cpuProfile(fmt.Sprintf("%s-r%d", sd.name, round+1))
	defer stopProfile()
	defer func() {
		res.errs = env.errs.String()
		res.msgs, res.foreign = env.tr.msgs.Load(), env.tr.foreign.Load()
	}()

	runtime.GC()
	debug.FreeOSMemory()
	res.rssBase, res.gorBase, res.heapBase = benchkit.RSS(), runtime.NumGoroutine(), benchkit.HeapInuse()
	benchkit.Say("   memory at the baseline: %s", benchkit.MemoryClasses())
	if *flagIdle > 0 {
		res.idleBase, _, _ = idleWindow(su.prod, env.req, *flagIdle, fmt.Sprintf("idlebase-%s-r%d", sd.name, round+1))
	}

	members := make([]member, M)
	open := map[int]bool{} // members not closed yet
	defer func() {         // a run that stopped early closes what it started
		for i := range members {
			if members[i] != nil && open[i] {
				members[i].Close()
			}
		}
	}()

	// Join phase.
	q0 := zp.snapshot()
	z0, c0, t0 := zx.Mark(), env.req.Snapshot(), time.Now()
	stopTimeline := env.tr.timeline(t0, M)
	defer stopTimeline()
	var lastJoin time.Time
	for i := 0; i < M; i++ {
		sleepUntil(t0.Add(time.Duration(i) * every))
		if i == M-1 {
			env.tr.openWindow()
			su.prod.TakeMaxAck()
		}
		lastJoin = time.Now()
		m, err := sd.join(env, i)
		res.joinCalls = append(res.joinCalls, time.Since(lastJoin))
		if err != nil {
			res.failed = fmt.Sprintf("join of member %d: %v", i, err)
			return res
		}
		members[i], open[i] = m, true
	}
	stopDump := dumpGoroutines(sd.name + "-join")
	res.joinFlow = env.tr.awaitFlow(lastJoin, upTo(M), *flagPhaseTimeout)
	stopDump()
	stopTimeline()
	benchkit.Say("   last join -> every partition consumed: %s (owned: %v)", flow(res.joinFlow, P), ownedList(env.tr, M))
	time.Sleep(time.Second)
	res.pauseJoin = env.tr.closeWindow(time.Now(), anyMember)
	res.waitJoin = env.tr.longestWaits(anyMember)
	res.ackJoin = su.prod.TakeMaxAck()
	z1, c1, t1 := zx.Mark(), env.req.Snapshot(), time.Now()
	q1 := zp.snapshot()
	res.zkqJoin = q1.sub(q0)
	res.zxids[0], res.zxids[1] = z0, z1
	res.zkJoin = benchkit.Between(z0, z1)
	res.movesJoin, res.claimsJoin = env.tr.moves.Load(), env.tr.claims.Load()
	res.join = window{"join", t1.Sub(t0), c1.Sub(c0)}

	// Steady state, every member in.
	time.Sleep(*flagSteady)
	res.goroutines, res.rss, res.heap = runtime.NumGoroutine(), benchkit.RSS(), benchkit.HeapInuse()
	writeHeapProfile(sd.name + "-steady")
	benchkit.Say("   memory at steady state: %s", benchkit.MemoryClasses())
	z2, c2, t2 := zx.Mark(), env.req.Snapshot(), time.Now()
	q2 := zp.snapshot()
	res.zkqSteady = q2.sub(q1)
	res.zkSteady = benchkit.Between(z1, z2)
	res.zxids[2] = z2
	res.steady = window{"steady", t2.Sub(t1), c2.Sub(c1)}
	for _, m := range members {
		if z, ok := m.(*zkMember); ok {
			res.rebalances += z.c.Stats().Rebalances
		}
	}

	// Idle window: production paused, every member in. The leave phase
	// starts once production has gone on again for 2 s.
	if *flagIdle > 0 {
		qi := zp.snapshot()
		res.idleCPU, res.idle, res.idleGC = idleWindow(su.prod, env.req, *flagIdle, fmt.Sprintf("idle-%s-r%d", sd.name, round+1))
		res.idleGoroutines, res.rssIdle = runtime.NumGoroutine(), benchkit.RSS()
		res.zkqIdle = zp.snapshot().sub(qi)
		time.Sleep(2 * time.Second)
		// The leave phase counts from here (the log breakdown's steady
		// range takes in the idle window).
		z2, c2, t2, q2 = zx.Mark(), env.req.Snapshot(), time.Now(), zp.snapshot()
		res.zxids[2] = z2
	}

	// Leave phase: members 0..M-2 close 1 s apart (each Close on its own
	// goroutine, as separate processes would); member M-1 remains.
	if res.joinFlow.silent == P {
		res.leaveSkipped = true // nothing flows at all: a leave phase would measure nothing
	}
	moves0, claims0 := env.tr.moves.Load(), env.tr.claims.Load()
	res.closes = make([]time.Duration, M-1)
	var wg sync.WaitGroup
	var lastLeave time.Time
	stopTrace := func() {} // the last leave's trace and profile, with $ZKGROUP_BENCH_TRACE, $ZKGROUP_BENCH_LEAVE_CPU
	if !res.leaveSkipped {
		for i := 0; i < M-1; i++ {
			sleepUntil(t2.Add(time.Duration(i) * every))
			if i == M-2 {
				env.tr.openWindow()
				su.prod.TakeMaxAck()
				name := fmt.Sprintf("leave-%s-r%d", sd.name, round+1)
				endTrace := startTrace(name)
				// With $ZKGROUP_BENCH_LEAVE_CPU, a CPU profile of the last
				// leave (not with $ZKGROUP_BENCH_CPU: one at a time).
				stopCPU := diagnostic("ZKGROUP_BENCH_LEAVE_CPU", name+".pprof", "   cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
				stopTrace = func() { stopCPU(); endTrace() }
			}
			lastLeave = time.Now()
			open[i] = false
			wg.Add(1)
			go func() {
				defer wg.Done()
				res.closes[i] = members[i].Close()
			}()
		}
		res.leaveFlow = env.tr.awaitFlow(lastLeave, []int{M - 1}, *flagPhaseTimeout)
		stopTrace()
		benchkit.Say("   last leave -> remaining member consumes all: %s (owned: %v)", flow(res.leaveFlow, P), ownedList(env.tr, M))
		time.Sleep(time.Second)
		res.pauseLeave = env.tr.closeWindow(time.Now(), only(M-1))
		sayWorstKept(env, time.Now(), only(M-1))
		res.waitLeave = env.tr.longestWaits(only(M - 1))
		env.tr.waits.print()
		res.ackLeave = su.prod.TakeMaxAck()
		closed := make(chan struct{})
		go func() { wg.Wait(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(2 * time.Minute):
			for _, d := range res.closes {
				if d == 0 {
					res.closesPending++
				}
			}
		}
	}
	z3, c3, t3 := zx.Mark(), env.req.Snapshot(), time.Now()
	q3 := zp.snapshot()
	res.zkqLeave = q3.sub(q2)
	res.zkLeave = benchkit.Between(z2, z3)
	res.zxids[3] = z3
	res.movesLeav, res.claimsLeave = env.tr.moves.Load()-moves0, env.tr.claims.Load()-claims0
	res.leave = window{"leave", t3.Sub(t2), c3.Sub(c2)}

	if !res.leaveSkipped {
		open[M-1] = false
		res.finalClose = members[M-1].Close()
		res.zkqFinal = zp.snapshot().sub(q3)
		res.zxids[4] = zx.Mark()
		res.zkFinal = benchkit.Between(z3, res.zxids[4])
	}
	return res
}

func ownedList(tr *tracker, m int) []int {
	o := tr.owned()
	out := make([]int, m)
	for i := range out {
		out[i] = o[i]
	}
	return out
}

func pauses(p map[int]time.Duration) []float64 {
	var v []float64
	for _, d := range p {
		v = append(v, d.Seconds())
	}
	return v
}

func durs(d []time.Duration) []float64 {
	var v []float64
	for _, x := range d {
		if x > 0 {
			v = append(v, x.Seconds())
		}
	}
	return v
}

func printScale(cl *testcluster.Cluster, zl *benchkit.ZKLog, r int, s scaleResult) {
	P, M := *flagPartitions, *flagMembers
	say := benchkit.Say
	say("== round %d, %s: %d partitions, %d members, %d records/s", r+1, s.side, P, M, *flagRate)
	if s.failed != "" {
		say("   RUN FAILED: %s", s.failed)
	}
	say("   (a) last join -> every partition consumed: %s", flow(s.joinFlow, P))
	switch {
	case s.leaveSkipped:
		say("   (b) last leave -> remaining member consumes all: not run (nothing flowed after the joins)")
	default:
		say("   (b) last leave -> remaining member consumes all: %s", flow(s.leaveFlow, P))
	}
	say("   (c) ZooKeeper write transactions: join phase %d (partition moves %d, claims %d; 2 x moves + members = %d) | steady %.0fs %d | leave phase %d (moves %d, claims %d; 2 x moves + members = %d) | last member's close %d",
		s.zkJoin, s.movesJoin, s.claimsJoin, 2*s.movesJoin+int64(M), s.steady.d.Seconds(), s.zkSteady,
		s.zkLeave, s.movesLeav, s.claimsLeave, 2*s.movesLeav+int64(M), s.zkFinal)
	if zl != nil {
		names := []string{"join phase", "steady", "leave phase", "last close"}
		for i, name := range names {
			if s.zxids[i] == 0 || s.zxids[i+1] == 0 {
				continue
			}
			txns, err := zl.Read(s.zxids[i], s.zxids[i+1]-1)
			if err != nil {
				say("       %s: transaction log: %v", name, err)
				continue
			}
			say("       %-11s %s", name+":", benchkit.Classify(txns, cl.Chroot()+"/consumers/"+s.group))
		}
	}
	say("   (d) Kafka requests written by this side's members, per second:")
	requestTable("       ", []window{s.join, s.steady, s.leave})
	say("   (e) steady state, %d members in: goroutines %d (%+d over the baseline of %d: %.0f per member); RSS %s (%s per member; %s per member over the baseline of %s); Go heap in use %s per member over the baseline",
		M, s.goroutines, s.goroutines-s.gorBase, s.gorBase, float64(s.goroutines-s.gorBase)/float64(M),
		benchkit.MB(float64(s.rss)), benchkit.MB(float64(s.rss)/float64(M)), benchkit.MB(float64(s.rss-s.rssBase)/float64(M)), benchkit.MB(float64(s.rssBase)),
		benchkit.MB(float64(s.heap-s.heapBase)/float64(M)))
	if s.side == "zkgroup" && !*flagZKProxy {
		say("   (g) not counted: the members reach ZooKeeper directly (-zk-proxy=false)")
	}
	if s.side == "zkgroup" && *flagZKProxy {
		say("   (g) ZooKeeper requests of the members (counting proxy): join phase %s", s.zkqJoin)
		say("       steady %.0fs: %s", s.steady.d.Seconds(), s.zkqSteady)
		say("       idle %.0fs: %s", s.idle.d.Seconds(), s.zkqIdle)
		say("       leave phase: %s", s.zkqLeave)
		say("       last close: %s", s.zkqFinal)
		say("       per join: %.0f requests, %.0f nodes read; per leave: %.0f requests, %.0f nodes read; rebalances counted by the members (Stats) at the end of the steady window: %d",
			float64(s.zkqJoin.requests)/float64(M), float64(s.zkqJoin.reads)/float64(M),
			float64(s.zkqLeave.requests)/float64(M-1), float64(s.zkqLeave.reads)/float64(M-1), s.rebalances)
	}
	if s.idle.d > 0 {
		say("   (h) idle %.0fs (production paused, %d members in): process CPU %.0f ms against %.0f ms in the baseline window: %.2f ms/s per member; goroutines %d; Kafka requests per member and second %.2f (Fetch %.2f); ZooKeeper requests per member and second %.3f",
			s.idle.d.Seconds(), M, ms64(s.idleCPU), ms64(s.idleBase), idleCPUPerMember(s)*1000, s.idleGoroutines,
			perMemberRate(s.idle), perMemberRate(s.idle, benchkit.APIFetch), float64(s.zkqIdle.requests)/s.idle.d.Seconds()/float64(M))
		requestTable("       ", []window{s.idle})
		say("       allocated %.1f KB per member and second; %d collections in the window (one before it)",
			float64(s.idleGC.Allocs)/s.idle.d.Seconds()/float64(M)/1e3, s.idleGC.Cycles)
	}
	cs := durs(s.closes)
	pending := ""
	if s.closesPending > 0 {
		pending = fmt.Sprintf(" (%d closes still running after 2 min)", s.closesPending)
	}
	say("   (f) Close per member: median %.3f s, max %.3f s over %d leaving members%s; last member %.3f s; Join call median %.3f s",
		benchkit.Median(cs), maxOr0(cs), len(cs), pending, s.finalClose.Seconds(), benchkit.Median(durs(s.joinCalls)))
	pj := pauses(s.pauseJoin)
	say("   longest pause per member on the partitions it kept: last join -> settled: median %.0f ms, max %.0f ms over %d members %s; last leave -> settled (remaining member): %.0f ms",
		benchkit.Median(pj)*1000, maxOr0(pj)*1000, len(pj), perMember(s.pauseJoin), maxOr0(pauses(s.pauseLeave))*1000)
	say("   longest wait in the log of a record on those partitions (delivery - broker's append time; a pause with short waits was production's): last join: max %.0f ms; last leave (remaining member): %.0f ms; the producer's longest produce-to-ack over the same windows: %.0f / %.0f ms",
		maxOr0(pauses(s.waitJoin))*1000, maxOr0(pauses(s.waitLeave))*1000, s.ackJoin.Seconds()*1000, s.ackLeave.Seconds()*1000)
	for _, w := range []struct {
		phase string
		ack   time.Duration
	}{{"join", s.ackJoin}, {"leave", s.ackLeave}} {
		if w.ack > time.Second {
			say("   NOTE: the brokers took %.1f s to take records in the %s phase: its convergence and pauses measure the cluster as much as the side", w.ack.Seconds(), w.phase)
		}
	}
	say("   messages %d (delivered by a member not owning the partition: %d); errors: %s", s.msgs, s.foreign, s.errs)
}

func ms64(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// idleCPUPerMember is the process's CPU seconds per second of the idle
// window over its baseline, per member.
func idleCPUPerMember(s scaleResult) float64 {
	if s.idle.d <= 0 {
		return math.NaN()
	}
	return (s.idleCPU - s.idleBase).Seconds() / s.idle.d.Seconds() / float64(*flagMembers)
}

// perMemberRate is the requests per second and member of w (keys: all
// when none).
func perMemberRate(w window, keys ...int) float64 {
	if w.d <= 0 {
		return math.NaN()
	}
	return perMemberRateN(w, *flagMembers, keys...)
}

// perMember lists pauses by member: "[m0 12ms m3 40ms]".
func perMember(p map[int]time.Duration) string {
	var ids []int
	for m := range p {
		ids = append(ids, m)
	}
	slices.Sort(ids)
	var parts []string
	for _, m := range ids {
		parts = append(parts, fmt.Sprintf("m%d %s", m, ms(p[m])))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func maxOr0(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return slices.Max(v)
}

// summarizeScale prints the medians over rounds of each side, zkgroup's
// over sarama's, and the goals beside.
func summarizeScale(b *testing.B, sds []side, results map[string][]scaleResult) {
	M := float64(*flagMembers)
	type fig struct {
		name string
		get  func(scaleResult) float64
		goal string
	}
	figs := []fig{
		{"(a) last join -> all consumed, s", func(s scaleResult) float64 { return conv(s.joinFlow) }, "<= the faster peer's (1,000 x 10: <= 0.6 s)"},
		{"(b) last leave -> all consumed, s", func(s scaleResult) float64 {
			if s.leaveSkipped {
				return math.Inf(1)
			}
			return conv(s.leaveFlow)
		}, "<= the faster peer's"},
		{"(c) ZK writes, join phase", func(s scaleResult) float64 { return float64(s.zkJoin) }, "<= 2 x moves + members"},
		{"    partition moves, join phase", func(s scaleResult) float64 { return float64(s.movesJoin) }, ""},
		{"    2 x moves + members, join phase", func(s scaleResult) float64 { return float64(2*s.movesJoin) + M }, ""},
		{"(c) ZK writes, leave phase", func(s scaleResult) float64 { return float64(s.zkLeave) }, "<= 2 x moves + members"},
		{"    partition moves, leave phase", func(s scaleResult) float64 { return float64(s.movesLeav) }, ""},
		{"    2 x moves + members, leave phase", func(s scaleResult) float64 { return float64(2*s.movesLeav) + M }, ""},
		{"(c) ZK writes, steady window", func(s scaleResult) float64 { return float64(s.zkSteady) }, "(brokers' own writes too)"},
		{"(d) coordinator req/s, steady", func(s scaleResult) float64 { return rate(s.steady, benchkit.CoordinatorAPIs...) }, ""},
		{"(d) OffsetCommit/s, steady", func(s scaleResult) float64 { return rate(s.steady, benchkit.APIOffsetCommit) }, ""},
		{"(d) OffsetFetch/s, steady", func(s scaleResult) float64 { return rate(s.steady, benchkit.APIOffsetFetch) }, ""},
		{"(d) Fetch/s, steady", func(s scaleResult) float64 { return rate(s.steady, benchkit.APIFetch) }, ""},
		{"(d) coordinator req/s, join phase", func(s scaleResult) float64 { return rate(s.join, benchkit.CoordinatorAPIs...) }, ""},
		{"(d) coordinator req/s, leave phase", func(s scaleResult) float64 { return rate(s.leave, benchkit.CoordinatorAPIs...) }, ""},
		{"(d) Kafka req/s per member, steady", func(s scaleResult) float64 { return perMemberRate(s.steady) }, ""},
		{"(d) Kafka req/s per member, idle", func(s scaleResult) float64 { return perMemberRate(s.idle) }, ""},
		{"(d) Fetch/s per member, idle", func(s scaleResult) float64 { return perMemberRate(s.idle, benchkit.APIFetch) }, ""},
		{"(g) ZK requests, join phase", func(s scaleResult) float64 { return float64(s.zkqJoin.requests) }, ""},
		{"(g) ZK nodes read, join phase", func(s scaleResult) float64 { return float64(s.zkqJoin.reads) }, ""},
		{"(g) ZK nodes read per join", func(s scaleResult) float64 { return float64(s.zkqJoin.reads) / M }, ""},
		{"(g) ZK requests, leave phase", func(s scaleResult) float64 { return float64(s.zkqLeave.requests) }, ""},
		{"(g) ZK nodes read per leave", func(s scaleResult) float64 { return float64(s.zkqLeave.reads) / (M - 1) }, ""},
		{"(g) ZK req/s per member, steady", func(s scaleResult) float64 {
			return float64(s.zkqSteady.requests) / max(s.steady.d.Seconds(), 1e-3) / M
		}, ""},
		{"(g) ZK req/s per member, idle", func(s scaleResult) float64 {
			return float64(s.zkqIdle.requests) / max(s.idle.d.Seconds(), 1e-3) / M
		}, ""},
		{"(e) goroutines over baseline", func(s scaleResult) float64 { return float64(s.goroutines - s.gorBase) }, ""},
		{"(e) goroutines per member", func(s scaleResult) float64 { return float64(s.goroutines-s.gorBase) / M }, ""},
		{"(h) idle CPU per member, ms/s", func(s scaleResult) float64 { return idleCPUPerMember(s) * 1000 }, "zkgroup <= franz-go's"},
		{"(e) RSS per member (total/members), MB", func(s scaleResult) float64 { return float64(s.rss) / M / 1e6 }, "zkgroup <= sarama's"},
		{"(e) RSS per member over baseline, MB", func(s scaleResult) float64 { return float64(s.rss-s.rssBase) / M / 1e6 }, "zkgroup <= franz-go's"},
		{"(e) RSS per member over baseline, idle, MB", func(s scaleResult) float64 {
			if s.rssIdle == 0 {
				return math.NaN()
			}
			return float64(s.rssIdle-s.rssBase) / M / 1e6
		}, "(collected before the window)"},
		{"(f) Close per member, median s", func(s scaleResult) float64 { return benchkit.Median(durs(s.closes)) }, ""},
		{"longest pause, last join, max ms", func(s scaleResult) float64 { return maxOr0(pauses(s.pauseJoin)) * 1000 }, ""},
		{"longest pause, last leave, ms", func(s scaleResult) float64 { return maxOr0(pauses(s.pauseLeave)) * 1000 }, ""},
		{"longest wait in the log, last join, ms", func(s scaleResult) float64 { return maxOr0(pauses(s.waitJoin)) * 1000 }, ""},
		{"longest wait in the log, last leave, ms", func(s scaleResult) float64 { return maxOr0(pauses(s.waitLeave)) * 1000 }, ""},
	}
	benchkit.Say("== BenchmarkScale summary: %d partitions over %d topic(s), %d members; medians over %d round(s) (inf: did not converge); load average now %s",
		*flagPartitions, *flagTopics, *flagMembers, *flagRounds, benchkit.LoadAvg())
	head := fmt.Sprintf("   %-40s", "")
	for _, sd := range sds {
		head += fmt.Sprintf(" %14s", sd.name)
	}
	zk := results["zkgroup"]
	var peers []string
	for _, sd := range sds {
		if sd.name != "zkgroup" && zk != nil && results[sd.name] != nil {
			peers = append(peers, sd.name)
			head += fmt.Sprintf(" %16s", "zkgroup/"+sd.name)
		}
	}
	benchkit.Say("%s   goal", head)
	for _, f := range figs {
		line := fmt.Sprintf("   %-40s", f.name)
		for _, sd := range sds {
			var v []float64
			for _, s := range results[sd.name] {
				v = append(v, f.get(s))
			}
			line += fmt.Sprintf(" %14.3f", benchkit.Median(v))
		}
		for _, peer := range peers {
			pr := results[peer]
			var ratios []float64
			for i := range min(len(zk), len(pr)) {
				ratios = append(ratios, f.get(zk[i])/f.get(pr[i]))
			}
			line += fmt.Sprintf(" %16.3f", benchkit.Median(ratios))
		}
		benchkit.Say("%s   %s", line, f.goal)
	}
	for _, sd := range sds {
		if rs := results[sd.name]; len(rs) > 0 {
			var v []float64
			for _, s := range rs {
				v = append(v, conv(s.joinFlow))
			}
			b.ReportMetric(benchkit.Median(v), sd.name+"-join-s")
		}
	}
}

// conv is a convergence time in seconds, +Inf when it did not converge.
func conv(f flowResult) float64 {
	if !f.ok() {
		return math.Inf(1)
	}
	return f.d.Seconds()
}

func rate(w window, keys ...int) float64 {
	return float64(w.c.Sum(keys...)) / max(w.d.Seconds(), 1e-3)
}

// cpuProfile writes a CPU profile of one side's run to
// $ZKGROUP_BENCH_CPU/<name>.pprof until the returned func is called (a
// diagnostic; off without the variable).
func cpuProfile(name string) func() {
	return diagnostic("ZKGROUP_BENCH_CPU", name+".pprof", "cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// diagnostic, with the variable env naming a directory, creates file there
// and starts writing it with start; it returns what ends the writing (stop,
// then the file closed). Without the variable, or on a failure (said as
// what), it does nothing.
func diagnostic(env, file, what string, start func(io.Writer) error, stop func()) func() {
	f := diagnosticFile(env, file, what)
	if f == nil {
		return func() {}
	}
	if err := start(f); err != nil {
		benchkit.Say("%s: %v", what, err)
		f.Close()
		return func() {}
	}
	return func() { stop(); f.Close() }
}

// diagnosticFile creates file in the directory the variable env names; it
// returns nil without the variable or on a failure (said as what).
func diagnosticFile(env, file, what string) *os.File {
	dir := os.Getenv(env)
	if dir == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(dir, file))
	if err != nil {
		benchkit.Say("%s: %v", what, err)
		return nil
	}
	return f
}

// writeHeapProfile writes the heap profile to $ZKGROUP_BENCH_HEAP/<name>.pb.gz
// (a diagnostic; off without the variable).
func writeHeapProfile(name string) {
	f := diagnosticFile("ZKGROUP_BENCH_HEAP", name+".pb.gz", "heap profile")
	if f == nil {
		return
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		benchkit.Say("heap profile: %v", err)
	}
}

// dumpGoroutinesOnce writes a goroutine profile into
// $ZKGROUP_BENCH_DUMP/<name>.txt (a diagnostic; off without the variable).
func dumpGoroutinesOnce(name string) {
	if f := diagnosticFile("ZKGROUP_BENCH_DUMP", name+".txt", "goroutine dump"); f != nil {
		_ = pprof.Lookup("goroutine").WriteTo(f, 1)
		f.Close()
	}
}

// dumpGoroutines writes a goroutine profile every 2 s into
// $ZKGROUP_BENCH_DUMP/<name>-<n>.txt until the returned func is called
// (a diagnostic; off without the variable).
func dumpGoroutines(name string) func() {
	dir := os.Getenv("ZKGROUP_BENCH_DUMP")
	if dir == "" {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Second):
			}
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.txt", name, n)))
			if err != nil {
				return
			}
			_ = pprof.Lookup("goroutine").WriteTo(f, 1)
			f.Close()
		}
	}()
	return func() { close(stop); <-done }
}

// sayWorstKept prints the partition kept through the window with the
// longest pause (when that pause began and ended) and the one whose record
// waited longest in the log, each with its last assigns (+) and revokes
// (-), for reading beside the members' logs.
func sayWorstKept(env *runEnv, end time.Time, ok func(int) bool) {
	const clock = "15:04:05.000"
	owners := func(hist []ownEvent) string {
		var b strings.Builder
		for _, e := range hist {
			sign := "-"
			if e.assign {
				sign = "+"
			}
			fmt.Fprintf(&b, " %sm%d %s", sign, e.m, time.Unix(0, e.at).Format(clock))
		}
		return b.String()
	}
	if p, from, to, hist := env.tr.worstKept(end, ok); p >= 0 {
		benchkit.Say("   longest pause on a kept partition: %s, %s -> %s (%.0f ms); its owners:%s",
			env.partName(p), from.Format(clock), to.Format(clock), to.Sub(from).Seconds()*1000, owners(hist))
	}
	if p, wait, hist := env.tr.longestWaitKept(ok); p >= 0 {
		benchkit.Say("   longest wait in the log on a kept partition: %s, %.0f ms; its owners:%s",
			env.partName(p), wait.Seconds()*1000, owners(hist))
	}
}

package scale

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
)

// BenchmarkIdle flags.
var (
	flagIdleWindow  = flag.Duration("idle-window", 30*time.Second, "BenchmarkIdle: the measured idle window (and its baseline before the joins)")
	flagIdleMembers = flag.Int("idle-members", 10, "BenchmarkIdle: members")
)

// idleResult is one side's run of BenchmarkIdle.
type idleResult struct {
	side             string
	failed           string
	flow             flowResult
	cpu, cpuBase     time.Duration
	w                window
	rss, rssBase     int64
	rssGC            int64 // after the idle window and two forced collections
	heap, heapBase   int64
	gc               benchkit.GCWork // allocated and collections in the idle window
	gor, gorBase     int
	firstFlow        time.Duration // after the idle window: production on again until every partition consumed
	idleLoad, onLoad string
}

// BenchmarkIdle: what a member whose partitions are all idle costs.
// -partitions partitions split evenly over -topics topics; per side and round: a baseline window
// of -idle-window with production paused and no member, then
// -idle-members members join at once, every partition is consumed, the
// producer pauses and, after 3 s for what is in flight, the process's CPU
// time (getrusage), its Kafka requests, RSS, Go heap and goroutines are
// taken over -idle-window; then production goes on again and the time
// until every partition is consumed again is taken (how quickly a member
// leaves its idle state). ZKGROUP_BENCH_CPU=DIR profiles the idle window
// (DIR/idle-<side>-r<round>.pprof) and, apart, the fleet start from the
// joins until every partition is consumed (DIR/start-<side>-r<round>.pprof;
// the members' goroutines carry the label side=<side>: `go tool pprof
// -tagfocus=side=zkgroup -top FILE` gives their CPU alone, without the
// process's baseline noise),
// ZKGROUP_BENCH_HEAP=DIR writes a heap profile at its end,
// ZKGROUP_BENCH_DUMP=DIR the goroutines (DIR/idle-<side>-r<round>.txt),
// ZKGROUP_BENCH_TRACE=DIR an execution trace of the idle window
// (DIR/idle-<side>-r<round>.trace).
//
//	go test -run='^$' -bench=BenchmarkIdle -benchtime=1x -timeout=30m ./scale/ \
//	    -args -sides=zkgroup,franz-go -warmup=false
func BenchmarkIdle(b *testing.B) {
	P, T, M := *flagPartitions, *flagTopics, *flagIdleMembers
	sds := sides(b)
	cl, topics, sub, _, _, prod, done := setUpTopics(b, "idle", P, T, *flagRate)
	defer done()
	benchkit.Say("BenchmarkIdle: %d partitions over %d topics, %d members, idle window %v, %d records/s between; load average %s",
		P, T, M, *flagIdleWindow, *flagRate, benchkit.LoadAvg())
	results := runRounds(b, sds, *flagRounds, 3*time.Second, func(sd side, r int) idleResult {
		env := &runEnv{c: cl, topic: topics[0], sub: sub, tr: newTracker(P), req: &benchkit.Requests{},
			group: fmt.Sprintf("bench-idle-%s-%d-%d", sd.name, r, time.Now().UnixNano()%1e9)}
		if T > 1 {
			env.setTopics(topics, P/T)
		}
		res := runIdle(env, prod, sd, r, M)
		printIdle(r, M, res)
		return res
	})
	for _, sd := range sds {
		var cpu, rss, rssGC, gor, req, heap []float64
		for _, res := range results[sd.name] {
			if res.failed != "" {
				continue
			}
			cpu = append(cpu, idleCPUms(res, M))
			rss = append(rss, float64(res.rss-res.rssBase)/float64(M))
			rssGC = append(rssGC, float64(res.rssGC-res.rssBase)/float64(M))
			heap = append(heap, float64(res.heap-res.heapBase)/float64(M))
			gor = append(gor, float64(res.gor-res.gorBase)/float64(M))
			req = append(req, perMemberRateN(res.w, M))
		}
		benchkit.Say("summary %-8s (medians over %d rounds): idle CPU %.2f ms/s per member; RSS %s (%s after two collections), Go heap %s per member over the baseline; %.0f goroutines per member; %.2f Kafka req/s per member",
			sd.name, len(cpu), benchkit.Median(cpu), benchkit.MB(benchkit.Median(rss)), benchkit.MB(benchkit.Median(rssGC)), benchkit.MB(benchkit.Median(heap)), benchkit.Median(gor), benchkit.Median(req))
	}
}

func idleCPUms(res idleResult, m int) float64 {
	return (res.cpu - res.cpuBase).Seconds() * 1000 / res.w.d.Seconds() / float64(m)
}

func runIdle(env *runEnv, prod *benchkit.Producer, sd side, round, M int) (res idleResult) {
	res.side = sd.name
	benchkit.Say("-- round %d, %s: group %s; load average %s", round+1, sd.name, env.group, benchkit.LoadAvg())
	time.Sleep(5 * time.Second) // what the previous side left (closing, garbage) settles
	runtime.GC()
	debug.FreeOSMemory()
	res.rssBase, res.gorBase, res.heapBase = benchkit.RSS(), runtime.NumGoroutine(), benchkit.HeapInuse()
	res.cpuBase, _, _ = idleWindow(prod, env.req, *flagIdleWindow, "")

	members := make([]member, 0, M)
	defer func() {
		for _, m := range members {
			m.Close()
		}
	}()
	stopStart := sync.OnceFunc(cpuProfile(fmt.Sprintf("start-%s-r%d", sd.name, round+1)))
	defer stopStart() // a join that failed
	t0 := time.Now()
	env.tr.openWindow()
	stopTimeline := env.tr.timeline(t0, M)
	// Every member joins at once, as a fleet that starts together: each
	// Join call in a goroutine of its own (zkgroup's Join blocks for its
	// connections; franz-go's NewClient does not).
	joined := make([]member, M)
	errs := make([]error, M)
	var wg sync.WaitGroup
	for i := range M {
		// The member's goroutines carry the side's label (they inherit
		// it), so that the idle window's profile tells them apart:
		// go tool pprof -tagfocus=side=zkgroup -top FILE.
		pprof.Do(context.Background(), pprof.Labels("side", sd.name), func(context.Context) {
			wg.Go(func() { joined[i], errs[i] = sd.join(env, i) })
		})
	}
	wg.Wait()
	for i, m := range joined {
		if m != nil {
			members = append(members, m)
		}
		if errs[i] != nil && res.failed == "" {
			res.failed = fmt.Sprintf("join of member %d: %v", i, errs[i])
		}
	}
	if res.failed != "" {
		return res
	}
	res.flow = env.tr.awaitFlow(t0, upTo(M), *flagPhaseTimeout)
	stopStart()
	stopTimeline()
	env.tr.closeWindow(time.Now(), anyMember)
	if !res.flow.ok() {
		res.failed = "no convergence: " + flow(res.flow, *flagPartitions)
		return res
	}
	time.Sleep(2 * time.Second)

	prod.SetPaused(true)
	time.Sleep(3 * time.Second)
	settleGC()
	res.idleLoad = benchkit.LoadAvg()
	stop := cpuProfile(fmt.Sprintf("idle-%s-r%d", sd.name, round+1))
	stopTrace := diagnostic("ZKGROUP_BENCH_TRACE", fmt.Sprintf("idle-%s-r%d.trace", sd.name, round+1), "trace", trace.Start, trace.Stop)
	c0, r0, w0, g0 := benchkit.CPUTime(), env.req.Snapshot(), time.Now(), benchkit.ReadGCWork()
	time.Sleep(*flagIdleWindow)
	c1, r1, w1, g1 := benchkit.CPUTime(), env.req.Snapshot(), time.Now(), benchkit.ReadGCWork()
	stop()
	stopTrace()
	res.cpu, res.w = c1-c0, window{"idle", w1.Sub(w0), r1.Sub(r0)}
	res.gc = g1.Sub(g0)
	dumpGoroutinesOnce(fmt.Sprintf("idle-%s-r%d", sd.name, round+1))
	res.gor, res.rss, res.heap = runtime.NumGoroutine(), benchkit.RSS(), benchkit.HeapInuse()
	benchkit.Say("   memory at the end of the idle window: %s", benchkit.MemoryClasses())
	writeHeapProfile(fmt.Sprintf("idle-%s-r%d", sd.name, round+1))
	// What the runtime's own collections (one at least every 2 minutes)
	// give back later: stacks shrink by half per collection at most.
	runtime.GC()
	runtime.GC()
	res.rssGC = benchkit.RSS()
	benchkit.Say("   after two forced collections: RSS %s per member over the baseline; %s",
		benchkit.MB(float64(res.rssGC-res.rssBase)/float64(M)), benchkit.MemoryClasses())

	// Production on again: how long until every partition is consumed.
	env.tr.openWindow()
	t1 := time.Now()
	prod.SetPaused(false)
	f := env.tr.awaitFlow(t1, upTo(M), *flagPhaseTimeout)
	env.tr.closeWindow(time.Now(), anyMember)
	res.firstFlow = f.d
	if !f.ok() {
		res.failed = "no flow after the idle window: " + flow(f, *flagPartitions)
	}
	return res
}

func printIdle(r, M int, s idleResult) {
	say := benchkit.Say
	say("== round %d, %s: %d members", r+1, s.side, M)
	if s.failed != "" {
		say("   RUN FAILED: %s", s.failed)
		return
	}
	say("   joined -> every partition consumed: %s", secs(s.flow.d))
	say("   idle %.0fs (load average %s): process CPU %.0f ms against %.0f ms in the baseline window: %.2f ms/s per member; Kafka requests %.2f per member and second (Fetch %.2f)",
		s.w.d.Seconds(), s.idleLoad, ms64(s.cpu), ms64(s.cpuBase), idleCPUms(s, M), perMemberRateN(s.w, M), perMemberRateN(s.w, M, benchkit.APIFetch))
	requestTable("       ", []window{s.w})
	say("   allocated %.1f KB per member and second (the paused producer's included); %d collections in the window",
		float64(s.gc.Allocs)/s.w.d.Seconds()/float64(M)/1e3, s.gc.Cycles)
	say("   goroutines %d (%.1f per member over the baseline of %d); RSS %s per member over the baseline of %s; Go heap in use %s per member over the baseline",
		s.gor, float64(s.gor-s.gorBase)/float64(M), s.gorBase, benchkit.MB(float64(s.rss-s.rssBase)/float64(M)), benchkit.MB(float64(s.rssBase)),
		benchkit.MB(float64(s.heap-s.heapBase)/float64(M)))
	say("   production on again -> every partition consumed: %s", secs(s.firstFlow))
}

// perMemberRateN is the requests of keys (all when none) per second and
// member of m in w.
func perMemberRateN(w window, m int, keys ...int) float64 {
	var n int64
	if len(keys) == 0 {
		for _, x := range w.c {
			n += x
		}
	} else {
		n = w.c.Sum(keys...)
	}
	return float64(n) / w.d.Seconds() / float64(m)
}

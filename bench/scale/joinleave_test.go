package scale

import (
	"fmt"
	"runtime/trace"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/subscription"
)

// jlEvent is one membership change of BenchmarkJoinLeave.
type jlEvent struct {
	moves, claims int64
	pause         time.Duration // the steady members' longest pause on the partitions they kept
	during        time.Duration // of those pauses, the longest that overlaps the change (event -> flowing again)
	resume        flowResult    // event -> every partition flowing again
	zk            int64         // ZooKeeper write transactions (all of the ensemble)
	zkGroup       int           // of those, by the group's own sessions (from the transaction log; -1 without it)
	zkBreakdown   string
	req           benchkit.Counts
	d             time.Duration
}

type jlRound struct {
	side        string
	failed      string
	setup       time.Duration
	quiet       time.Duration // the steady members' longest pause over a window of the events' length with no event: the floor
	join, leave jlEvent
	closeLeaver time.Duration
	errs        string
}

// BenchmarkJoinLeave: a group of -jl-steady (3) members on a topic of
// -jl-partitions (24) partitions with -jl-rate (2,400) records/s
// throughout; a fourth member joins, and once every partition flows again
// (and at least 3 s later) it leaves. Each round runs each side once with a
// fresh group, alternating which goes first. Per event: partitions moved,
// the steady members' longest pause on the partitions they kept, the time
// until every partition flows again, ZooKeeper writes.
//
//	go test -run='^$' -bench=BenchmarkJoinLeave -benchtime=1x -timeout=60m ./scale/ -args -jl-rounds=20
func BenchmarkJoinLeave(b *testing.B) {
	P := *flagJLPartitions
	sds := sides(b)
	cl, topic, sub, zx, zl, _, done := setUp(b, "joinleave", P, *flagJLRate)
	defer done()
	benchkit.Say("BenchmarkJoinLeave: topic %s: %d partitions, replication %d; %d steady members, a %dth joins then leaves; %d records/s; zkgroup strategy %q, sarama strategy %s; %d round(s)",
		topic, P, *flagReplication, *flagJLSteady, *flagJLSteady+1, *flagJLRate, zkStrategyName(), *flagSaramaStrategy, *flagJLRounds)
	results := runRounds(b, sds, *flagJLRounds, time.Second, func(sd side, r int) jlRound {
		res := runJoinLeave(cl, zx, zl, topic, sub, sd, r)
		printJoinLeave(r, res)
		return res
	})
	summarizeJoinLeave(sds, results)
}

func runJoinLeave(cl *testcluster.Cluster, zx *benchkit.Zxids, zl *benchkit.ZKLog, topic string, sub *subscription.Subscription, sd side, round int) (res jlRound) {
	P, S := *flagJLPartitions, *flagJLSteady
	env := &runEnv{c: cl, topic: topic, sub: sub, tr: newTracker(P), req: &benchkit.Requests{},
		group: fmt.Sprintf("bench-jl-%s-%d-%d", sd.name, round, time.Now().UnixNano()%1e9)}
	res.side = sd.name
	defer func() { res.errs = env.errs.String() }()
	members := make([]member, S+1)
	defer closeAll(members)
	start := time.Now()
	if res.failed = joinFlowing(env, sd, members[:S], "steady members"); res.failed != "" {
		return res
	}
	res.setup = time.Since(start)
	time.Sleep(2 * time.Second)

	// The floor: the same measure over a window as long as an event's, with
	// no event in it. Gaps this long happen without any rebalance (fetch
	// cycles, GC, the brokers and this process sharing the machine's cores).
	env.tr.openWindow()
	sleepUntil(time.Now().Add(3 * time.Second))
	res.quiet = maxPause(env.tr.closeWindow(time.Now(), below(S)))

	event := func(ev *jlEvent, members []int, change func()) {
		env.tr.openWindow()
		stopTrace := startTrace(fmt.Sprintf("%s-%s-%d", sd.name, evName(ev == &res.join), round))
		defer stopTrace()
		m0, c0 := env.tr.moves.Load(), env.tr.claims.Load()
		r0 := env.req.Snapshot()
		z0 := zx.Mark()
		t := time.Now()
		change()
		if res.failed != "" {
			return
		}
		ev.resume = env.tr.awaitFlow(t, members, *flagPhaseTimeout)
		sleepUntil(time.Now().Add(time.Second))
		sleepUntil(t.Add(3 * time.Second))
		if timelineOn() {
			benchkit.Say("   longest gaps on kept partitions, from the event:%s", env.tr.longestGaps(t, below(S)))
		}
		now := time.Now()
		ev.during = env.tr.pauseDuring(t, t.Add(ev.resume.d), now, below(S))
		ev.pause = maxPause(env.tr.closeWindow(now, below(S)))
		z1 := zx.Mark()
		ev.d = time.Since(t)
		ev.req = env.req.Snapshot().Sub(r0)
		ev.zk = benchkit.Between(z0, z1)
		ev.moves, ev.claims = env.tr.moves.Load()-m0, env.tr.claims.Load()-c0
		ev.zkGroup = -1
		if zl != nil {
			if txns, err := zl.Read(z0, z1-1); err == nil {
				bd := benchkit.Classify(txns, cl.Chroot()+"/consumers/"+env.group)
				ev.zkGroup, ev.zkBreakdown = 0, bd.String()
				for _, v := range bd.Group {
					ev.zkGroup += v
				}
			}
		}
	}
	event(&res.join, upTo(S+1), func() {
		m, err := sd.join(env, S)
		if err != nil {
			res.failed = fmt.Sprintf("join of member %d: %v", S, err)
			return
		}
		members[S] = m
	})
	if res.failed != "" {
		return res
	}
	time.Sleep(time.Second)
	closed := make(chan struct{})
	event(&res.leave, upTo(S), func() {
		leaver := members[S]
		members[S] = nil // not closed again at the end
		go func() {
			defer close(closed)
			res.closeLeaver = leaver.Close()
		}()
	})
	select {
	case <-closed:
	case <-time.After(time.Minute):
		res.failed = "the leaving member's Close did not return within a minute"
	}
	return res
}

func evName(join bool) string {
	if join {
		return "join"
	}
	return "leave"
}

// startTrace, with ZKGROUP_BENCH_TRACE set to a directory (a diagnostic),
// writes a runtime trace of one event there; it returns what ends it.
func startTrace(name string) func() {
	return diagnostic("ZKGROUP_BENCH_TRACE", name+".trace", "   trace", trace.Start, trace.Stop)
}

func maxPause(p map[int]time.Duration) time.Duration {
	var m time.Duration
	for _, d := range p {
		m = max(m, d)
	}
	return m
}

func printJoinLeave(r int, s jlRound) {
	P := *flagJLPartitions
	ev := func(e jlEvent) string {
		return fmt.Sprintf("moved %d (claims %d), steady members' longest pause %s (overlapping the change %s), every partition flowing after %s, ZooKeeper writes %d (group's own %d), coordinator requests %d, OffsetCommit %d",
			e.moves, e.claims, ms(e.pause), ms(e.during), flow(e.resume, P), e.zk, e.zkGroup, e.req.Sum(benchkit.CoordinatorAPIs...), e.req[benchkit.APIOffsetCommit])
	}
	if s.failed != "" {
		benchkit.Say("   round %d %-8s RUN FAILED: %s", r+1, s.side, s.failed)
	}
	benchkit.Say("   round %d %-8s no event: steady members' longest pause %s over 3 s", r+1, s.side, ms(s.quiet))
	benchkit.Say("   round %d %-8s join:  %s", r+1, s.side, ev(s.join))
	benchkit.Say("   round %d %-8s leave: %s; the leaver's Close %s; errors: %s", r+1, s.side, ev(s.leave), ms(s.closeLeaver), s.errs)
	if s.join.zk > 0 || s.leave.zk > 0 {
		benchkit.Say("      ZooKeeper, join:  %s", s.join.zkBreakdown)
		benchkit.Say("      ZooKeeper, leave: %s", s.leave.zkBreakdown)
	}
}

func summarizeJoinLeave(sds []side, results map[string][]jlRound) {
	benchkit.Say("== BenchmarkJoinLeave summary over %d round(s): %d partitions, %d steady members + 1 joining and leaving", *flagJLRounds, *flagJLPartitions, *flagJLSteady)
	benchkit.Say("   %-8s %-6s %14s %22s %22s %22s %14s", "side", "event", "moved p50/max", "longest pause p50/p99", "during change p50/p99", "flowing again p50/p99", "ZK writes p50")
	for _, sd := range sds {
		var quiet []float64
		for _, r := range results[sd.name] {
			quiet = append(quiet, r.quiet.Seconds()*1000)
		}
		benchkit.Say("   %-8s %-6s %14s %10.0f/%-8.0f ms", sd.name, "none", "", benchkit.Median(quiet), benchkit.Percentile(quiet, 99))
		for _, which := range []string{"join", "leave"} {
			var moved, pause, during, resume, zk []float64
			silent := 0
			for _, r := range results[sd.name] {
				e := r.join
				if which == "leave" {
					e = r.leave
				}
				moved = append(moved, float64(e.moves))
				pause = append(pause, e.pause.Seconds()*1000)
				during = append(during, e.during.Seconds()*1000)
				if !e.resume.ok() {
					silent++
				}
				resume = append(resume, conv(e.resume)*1000)
				zk = append(zk, float64(e.zk))
			}
			note := ""
			if silent > 0 {
				note = fmt.Sprintf(" (%d did not converge, counted as infinite)", silent)
			}
			benchkit.Say("   %-8s %-6s %7.0f/%-6.0f %10.0f/%-8.0f ms %10.0f/%-8.0f ms %10.0f/%-8.0f ms %14.0f%s", sd.name, which,
				benchkit.Median(moved), maxOr0(moved), benchkit.Median(pause), benchkit.Percentile(pause, 99),
				benchkit.Median(during), benchkit.Percentile(during, 99),
				benchkit.Median(resume), benchkit.Percentile(resume, 99), benchkit.Median(zk), note)
		}
	}
	benchkit.Say("   (event none: the same 3 s window with no join or leave, the floor of the pause on this machine)")
	benchkit.Say("   goals (zkgroup): a join moves <= 8; steady members' pause p99 <= 50 ms; flowing again p99 < 500 ms; ZK writes <= 2 x moved + members")
}

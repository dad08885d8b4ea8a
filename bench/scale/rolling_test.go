package scale

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/subscription"
)

// BenchmarkRollingRestart
var (
	flagRRPartitions = flag.Int("rr-partitions", 24, "BenchmarkRollingRestart: partitions of the topic")
	flagRRMembers    = flag.Int("rr-members", 3, "BenchmarkRollingRestart: members, each restarted once per round")
	flagRRRounds     = flag.Int("rr-rounds", 3, "BenchmarkRollingRestart: rounds (each side once per round, alternating which goes first)")
	flagRRRate       = flag.Int("rr-rate", 2400, "BenchmarkRollingRestart: records per second produced throughout")
	flagRRDown       = flag.Duration("rr-down", 2*time.Second, "BenchmarkRollingRestart: how long a restarted member stays down between Close and joining again (a process restart: stop, start, connect)")
	flagRRGrace      = flag.Duration("rr-grace", 10*time.Second, "BenchmarkRollingRestart: zkgroup's RestartGrace (the daemon's default: the session timeout, 10s); 0: no side static (no instance ids), the comparison")
)

// rrEvent is the restart of one member.
type rrEvent struct {
	moves, claims int64
	pause         time.Duration // the other members' longest pause on the partitions they kept
	stretch       time.Duration // any partition's longest time unconsumed
	back          flowResult    // Close called -> every partition flowing, the restarted member with its share
	closeTook     time.Duration
	redelivered   int64
}

type rrRound struct {
	side, failed string
	quiet        time.Duration // the members' longest pause over 3 s with no event: the floor
	events       []rrEvent
	errs         string
}

// BenchmarkRollingRestart: a rolling restart of a group of static members
// (stable instance ids: zkgroup InstanceID with RestartGrace -rr-grace,
// sarama Consumer.Group.InstanceId, franz-go InstanceID), -rr-members (3)
// on -rr-partitions (24) partitions with -rr-rate (2,400) records/s
// throughout. Each member in turn is closed and joins again with its id
// -rr-down (2 s) later, as a process restarted by a deploy; the next once
// every partition flows again and at least 3 s after the Close. Per restart: partitions
// moved (goal 0), the other members' longest pause on the partitions they
// kept (goal: the no-event floor measured before in the same run), every
// partition's longest unconsumed stretch, messages delivered twice (goal
// 0), and the time until everything flows again.
//
//	go test -run='^$' -bench=BenchmarkRollingRestart -benchtime=1x -timeout=15m ./scale/ \
//	    -args -sides=zkgroup,franz-go,sarama -rr-rounds=3
func BenchmarkRollingRestart(b *testing.B) {
	P := *flagRRPartitions
	sds := sides(b)
	cl, topic, sub, _, _, _, done := setUp(b, "rolling", P, *flagRRRate)
	defer done()
	benchkit.Say("BenchmarkRollingRestart: topic %s: %d partitions, replication %d; %d members (static unless -rr-grace=0), each restarted in turn, down %v; %d records/s; zkgroup RestartGrace %v, strategy %q; sarama strategy %s; %d round(s)",
		topic, P, *flagReplication, *flagRRMembers, *flagRRDown, *flagRRRate, *flagRRGrace, zkStrategyName(), *flagSaramaStrategy, *flagRRRounds)
	results := runRounds(b, sds, *flagRRRounds, time.Second, func(sd side, r int) rrRound {
		res := runRolling(cl, topic, sub, sd, r)
		printRolling(r, res)
		return res
	})
	summarizeRolling(sds, results)
}

func runRolling(cl *testcluster.Cluster, topic string, sub *subscription.Subscription, sd side, round int) (res rrRound) {
	P, N := *flagRRPartitions, *flagRRMembers
	env := &runEnv{c: cl, topic: topic, sub: sub, tr: newTracker(P), req: &benchkit.Requests{},
		group:  fmt.Sprintf("bench-rr-%s-%d-%d", sd.name, round, time.Now().UnixNano()%1e9),
		static: *flagRRGrace, redelivered: newRedeliveries()}
	res.side = sd.name
	defer func() { res.errs = env.errs.String() }()
	members := make([]member, N)
	defer closeAll(members)
	if res.failed = joinFlowing(env, sd, members, "members"); res.failed != "" {
		return res
	}
	time.Sleep(2 * time.Second)
	env.tr.openWindow()
	sleepUntil(time.Now().Add(3 * time.Second))
	res.quiet = maxPause(env.tr.closeWindow(time.Now(), anyMember))

	for i := range N {
		var ev rrEvent
		env.tr.openWindow()
		m0, c0, d0 := env.tr.moves.Load(), env.tr.claims.Load(), env.redelivered.n.Load()
		t := time.Now()
		ev.closeTook = members[i].Close()
		members[i] = nil
		time.Sleep(*flagRRDown)
		m, err := sd.join(env, i)
		if err != nil {
			res.failed = fmt.Sprintf("join of member %d again: %v", i, err)
			return res
		}
		members[i] = m
		ev.back = env.tr.awaitFlow(t, upTo(N), *flagPhaseTimeout)
		sleepUntil(time.Now().Add(time.Second))
		sleepUntil(t.Add(*flagRRDown + 3*time.Second))
		end := time.Now()
		ev.pause = maxPause(env.tr.closeWindow(end, func(m int) bool { return m != i }))
		ev.stretch = env.tr.longestStretch(end)
		ev.moves, ev.claims = env.tr.moves.Load()-m0, env.tr.claims.Load()-c0
		ev.redelivered = env.redelivered.n.Load() - d0
		res.events = append(res.events, ev)
		if !ev.back.ok() {
			res.failed = fmt.Sprintf("after the restart of member %d: %s", i, flow(ev.back, P))
			return res
		}
	}
	return res
}

func printRolling(r int, s rrRound) {
	P := *flagRRPartitions
	if s.failed != "" {
		benchkit.Say("   round %d %-8s RUN FAILED: %s", r+1, s.side, s.failed)
	}
	benchkit.Say("   round %d %-8s no event: members' longest pause %s over 3 s", r+1, s.side, ms(s.quiet))
	for i, e := range s.events {
		benchkit.Say("   round %d %-8s restart of member %d: moved %d (claims %d), the others' longest pause %s, longest unconsumed %s, delivered twice %d, Close %s, every partition flowing after %s",
			r+1, s.side, i, e.moves, e.claims, ms(e.pause), ms(e.stretch), e.redelivered, ms(e.closeTook), flow(e.back, P))
	}
	benchkit.Say("   round %d %-8s errors: %s", r+1, s.side, s.errs)
}

func summarizeRolling(sds []side, results map[string][]rrRound) {
	benchkit.Say("== BenchmarkRollingRestart summary over %d round(s): %d partitions, %d members (static: %v), each restarted once per round, down %v (%d restarts per side)",
		*flagRRRounds, *flagRRPartitions, *flagRRMembers, *flagRRGrace > 0, *flagRRDown, *flagRRRounds**flagRRMembers)
	benchkit.Say("   %-8s %12s %14s %22s %18s %22s %10s", "side", "moved sum", "claims p50", "others' pause p50/p99", "floor p50/p99", "unconsumed p50/max", "twice sum")
	var rows []string
	for _, sd := range sds {
		var moved, claims, twice int64
		var pause, stretch, quiet []float64
		failed := 0
		for _, r := range results[sd.name] {
			if r.failed != "" {
				failed++
			}
			quiet = append(quiet, r.quiet.Seconds()*1000)
			for _, e := range r.events {
				moved += e.moves
				twice += e.redelivered
				claims += e.claims
				pause = append(pause, e.pause.Seconds()*1000)
				stretch = append(stretch, e.stretch.Seconds()*1000)
			}
		}
		note := ""
		if failed > 0 {
			note = fmt.Sprintf(" (%d round(s) failed)", failed)
		}
		n := max(len(pause), 1)
		line := fmt.Sprintf("   %-8s %12d %14.1f %10.0f/%-8.0f ms %7.0f/%-7.0f ms %10.0f/%-8.0f ms %10d%s", sd.name, moved, float64(claims)/float64(n),
			benchkit.Median(pause), benchkit.Percentile(pause, 99), benchkit.Median(quiet), benchkit.Percentile(quiet, 99),
			benchkit.Median(stretch), maxOr0(stretch), twice, note)
		rows = append(rows, line)
	}
	benchkit.Say("%s", strings.Join(rows, "\n"))
	benchkit.Say("   (claims: assignments per restart, the restarted member's own included; floor: the same pause over 3 s with no event, per round)")
	benchkit.Say("   goals (zkgroup): moved 0; the others' pause p99 within a few ms of the floor; twice 0")
}

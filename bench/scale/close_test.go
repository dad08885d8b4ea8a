package scale

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
)

var (
	flagClosePartitions = flag.Int("close-partitions", 200, "BenchmarkClose: partitions of the topic (the closing member owns half)")
	flagCloseRounds     = flag.Int("close-rounds", 5, "BenchmarkClose: rounds (each side once per round, alternating which goes first)")
	flagCloseRate       = flag.Int("close-rate", 600, "BenchmarkClose: records per second produced throughout")
)

// BenchmarkClose measures Close alone, lighter than BenchmarkScale: per
// round and side, two members of a fresh group share a topic of
// -close-partitions partitions (200) while a producer writes -close-rate
// records/s (600: 3 per partition and second, as BenchmarkScale's); once
// every partition flows and 3 s passed (routine commits under way), member
// 0 (half the partitions) closes, timed, and then member 1 (all of them).
// The summary gives each side's median and max over the rounds.
//
//	go test -run='^$' -bench=BenchmarkClose -benchtime=1x -timeout=30m ./scale/ -args -sides=zkgroup,franz-go
func BenchmarkClose(b *testing.B) {
	P := *flagClosePartitions
	sds := sides(b)
	cl, topic, sub, _, _, prod, done := setUp(b, "close", P, *flagCloseRate)
	defer done()
	benchkit.Say("BenchmarkClose: topic %s: %d partitions, %d records/s, 2 members per run, %d round(s)", topic, P, *flagCloseRate, *flagCloseRounds)
	// Per round: member 0's Close (half the partitions), member 1's (all of them).
	results := runRounds(b, sds, *flagCloseRounds, 2*time.Second, func(sd side, r int) [2]time.Duration {
		env := &runEnv{c: cl, topic: topic, sub: sub, tr: newTracker(P), req: &benchkit.Requests{},
			group: fmt.Sprintf("bench-close-%s-%d-%d", sd.name, r, time.Now().UnixNano()%1e9)}
		d0, d1, owned, err := closeRound(env, sd)
		if err != nil {
			b.Fatalf("round %d, %s: %v", r+1, sd.name, err)
		}
		benchkit.Say("   round %d %-8s Close of member 0 (%d partitions) %s, of member 1 (%d) %s; errors: %s",
			r+1, sd.name, owned, ms(d0), P, ms(d1), env.errs.String())
		return [2]time.Duration{d0, d1}
	})
	var lines []string
	for _, sd := range sds {
		var first, last []time.Duration
		for _, d := range results[sd.name] {
			first, last = append(first, d[0]), append(last, d[1])
		}
		f, l := durs(first), durs(last)
		lines = append(lines, fmt.Sprintf("%-8s Close of a member owning %d: median %.3f s, max %.3f s; of the last member (%d): median %.3f s, max %.3f s",
			sd.name, P/2, benchkit.Median(f), slices.Max(f), P, benchkit.Median(l), slices.Max(l)))
	}
	benchkit.Say("BenchmarkClose summary:\n   %s", strings.Join(lines, "\n   "))
	benchkit.Say("producer: %d records sent", prod.Sent())
}

// closeRound joins two members, waits until every partition flows, and
// closes them one after the other; it returns both Close times and how
// many partitions member 0 owned when it closed.
func closeRound(env *runEnv, sd side) (d0, d1 time.Duration, owned int, err error) {
	var members []member
	defer func() { // a round that failed closes what it started
		if err != nil {
			for _, m := range members {
				m.Close()
			}
		}
	}()
	start := time.Now()
	for i := range 2 {
		m, err := sd.join(env, i)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("join of member %d: %w", i, err)
		}
		members = append(members, m)
	}
	if f := env.tr.awaitFlow(start, upTo(2), *flagPhaseTimeout); !f.ok() {
		return 0, 0, 0, fmt.Errorf("not every partition flows after %v: %d silent, %d short", f.d, f.silent, f.short)
	}
	time.Sleep(3 * time.Second) // routine commits under way, as in a member that ran a while
	owned = env.tr.owned()[0]
	d0 = members[0].Close()
	if f := env.tr.awaitFlow(time.Now(), []int{1}, *flagPhaseTimeout); !f.ok() {
		members = members[1:]
		return 0, 0, 0, fmt.Errorf("member 1 does not take every partition over within %v", f.d)
	}
	d1 = members[1].Close()
	return d0, d1, owned, nil
}

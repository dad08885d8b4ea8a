package scale

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// Flags of the test binary: pass them after -args.
var (
	flagSides          = flag.String("sides", "zkgroup,sarama", "sides to run, in this order in the first round")
	flagReplication    = flag.Int("replication", 1, "replication factor of the topics")
	flagPhaseTimeout   = flag.Duration("phase-timeout", 150*time.Second, "bound of every wait for convergence")
	flagZkStrategy     = flag.String("zkgroup-strategy", "", "zkgroup's Config.Strategy (empty: the library's default)")
	flagZkJoinSettle   = flag.Duration("zkgroup-join-settle", 0, "zkgroup's Config.JoinSettle (0: the library's default)")
	flagSaramaStrategy = flag.String("sarama-strategy", "range", "sarama's strategy: range (its default), sticky, roundrobin, cooperative-sticky")
	flagWarmup         = flag.Bool("warmup", true, "warm the topic up before the first side (false: a diagnostic run on a loaded machine, where the warm-up may never see a steady cluster; times then include the new topic's stall)")

	// BenchmarkScale
	flagPartitions = flag.Int("partitions", 1000, "BenchmarkScale: partitions of the topic")
	flagMembers    = flag.Int("members", 10, "BenchmarkScale: members (at least 2)")
	flagRounds     = flag.Int("rounds", 1, "BenchmarkScale: rounds (each side once per round, alternating which goes first)")
	flagRate       = flag.Int("rate", 3000, "BenchmarkScale: records per second produced throughout")
	flagEvery      = flag.Duration("every", time.Second, "BenchmarkScale: time between two joins, and between two leaves")
	flagSteady     = flag.Duration("steady", 5*time.Second, "BenchmarkScale: steady-state window with every member in")
	flagTopics     = flag.Int("topics", 1, "BenchmarkScale: topics the partitions are split over (evenly; every member subscribes to all)")
	flagZKProxy    = flag.Bool("zk-proxy", true, "BenchmarkScale: zkgroup's members reach ZooKeeper through the counting proxy of (g), which runs in this process; false: directly (no (g) counts, and no proxy CPU in the idle figure)")
	flagIdle       = flag.Duration("idle", 10*time.Second, "BenchmarkScale: idle window (production paused) for the CPU per member, with a window as long before the joins for the baseline; 0: none")

	// BenchmarkJoinLeave
	flagJLPartitions = flag.Int("jl-partitions", 24, "BenchmarkJoinLeave: partitions of the topic")
	flagJLRounds     = flag.Int("jl-rounds", 5, "BenchmarkJoinLeave: rounds")
	flagJLRate       = flag.Int("jl-rate", 2400, "BenchmarkJoinLeave: records per second produced throughout")
	flagJLSteady     = flag.Int("jl-steady", 3, "BenchmarkJoinLeave: steady members")
)

// diagnosticMemProfileRate is runtime.MemProfileRate in a diagnostic
// run (ZKGROUP_BENCH_HEAP, or a member process with -process-memory): a
// sample every 4 KiB allocated, not every 512 KiB, so that what a member
// holds is seen object by object. It costs CPU: never in a measuring run.
const diagnosticMemProfileRate = 4 << 10

func TestMain(m *testing.M) {
	if spec := os.Getenv(memberEnv); spec != "" {
		os.Exit(runMemberProcess(spec)) // BenchmarkIdleProcess's member
	}
	if os.Getenv("ZKGROUP_BENCH_HEAP") != "" {
		runtime.MemProfileRate = diagnosticMemProfileRate
	}
	os.Exit(testcluster.Main(m))
}

func sides(tb testing.TB) []side {
	var out []side
	for _, n := range strings.Split(*flagSides, ",") {
		sd, err := sideByName(strings.TrimSpace(n))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, sd)
	}
	if _, err := saramaStrategy(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// rotate returns the sides in the order of round r: the first side of
// round 0 goes last in round 1, and so on.
// joinFlowing joins members 0 to len(members)-1 of sd into members and
// waits until every partition of env's tracker flows; it returns why not
// (what names the members), "" once they do.
func joinFlowing(env *runEnv, sd side, members []member, what string) string {
	for i := range members {
		m, err := sd.join(env, i)
		if err != nil {
			return fmt.Sprintf("join of member %d: %v", i, err)
		}
		members[i] = m
	}
	if f := env.tr.awaitFlow(time.Now(), upTo(len(members)), *flagPhaseTimeout); !f.ok() {
		return fmt.Sprintf("the %d %s: %s", len(members), what, flow(f, len(env.tr.parts)))
	}
	return ""
}

// closeAll closes, all at once, the members not nil.
func closeAll(members []member) {
	var wg sync.WaitGroup
	for _, m := range members {
		if m != nil {
			wg.Go(func() { m.Close() })
		}
	}
	wg.Wait()
}

// runRounds runs, b.N times with the timer on, rounds rounds in which every
// side runs once (benchkit.Rounds; round counts from 0 here), pausing
// after each run to let the brokers settle; it returns each side's
// results in order.
func runRounds[R any](b *testing.B, sds []side, rounds int, pause time.Duration, run func(sd side, round int) R) map[string][]R {
	results := map[string][]R{}
	b.ResetTimer()
	benchkit.Rounds(b, b.N, rounds, sds, func(sd side) string { return sd.name },
		func(sd side, round int) (R, error) { return run(sd, round-1), nil },
		func(sd side, _ int, res R) {
			results[sd.name] = append(results[sd.name], res)
			time.Sleep(pause)
		})
	b.StopTimer()
	return results
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }

// flow prints a convergence figure, or that it did not converge.
func flow(f flowResult, partitions int) string {
	if !f.ok() {
		return fmt.Sprintf("DID NOT CONVERGE within %v: %d of %d partitions still silent, %d member(s) under their share", f.d.Round(time.Second), f.silent, partitions, f.short)
	}
	return secs(f.d)
}

// apiRows are the request kinds the request tables show.
var apiRows = []struct {
	name string
	keys []int
}{
	{"OffsetCommit", []int{benchkit.APIOffsetCommit}},
	{"OffsetFetch", []int{benchkit.APIOffsetFetch}},
	{"Heartbeat", []int{benchkit.APIHeartbeat}},
	{"JoinGroup+SyncGroup+LeaveGroup", []int{benchkit.APIJoinGroup, benchkit.APISyncGroup, benchkit.APILeaveGroup}},
	{"= to the group coordinator", benchkit.CoordinatorAPIs},
	{"FindCoordinator", []int{benchkit.APIFindCoordinator}},
	{"Fetch", []int{benchkit.APIFetch}},
	{"ListOffsets", []int{benchkit.APIListOffsets}},
	{"Metadata", []int{benchkit.APIMetadata}},
}

// window is a span of a run with the side's request counts over it.
type window struct {
	name string
	d    time.Duration
	c    benchkit.Counts
}

// requestTable prints requests per second of each window.
func requestTable(indent string, ws []window) {
	head := fmt.Sprintf("%s%-32s", indent, "requests/s")
	for _, w := range ws {
		head += fmt.Sprintf(" %18s", fmt.Sprintf("%s %.1fs", w.name, w.d.Seconds()))
	}
	benchkit.Say("%s", head)
	for _, r := range apiRows {
		line := fmt.Sprintf("%s%-32s", indent, r.name)
		for _, w := range ws {
			line += fmt.Sprintf(" %18.1f", float64(w.c.Sum(r.keys...))/max(w.d.Seconds(), 1e-3))
		}
		benchkit.Say("%s", line)
	}
	// Requests of kinds without a row (ApiVersions on each new
	// connection, for one), by API key.
	listed := map[int]bool{}
	for _, r := range apiRows {
		for _, k := range r.keys {
			listed[k] = true
		}
	}
	line := fmt.Sprintf("%s%-32s", indent, "other (API key: req/s)")
	for _, w := range ws {
		var parts []string
		for k, n := range w.c {
			if n > 0 && !listed[k] {
				parts = append(parts, fmt.Sprintf("%d: %.1f", k, float64(n)/max(w.d.Seconds(), 1e-3)))
			}
		}
		if len(parts) == 0 {
			parts = []string{"-"}
		}
		line += fmt.Sprintf(" %18s", strings.Join(parts, ", "))
	}
	benchkit.Say("%s", line)
}

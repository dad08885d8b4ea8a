package throughput

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/subscription"
)

var (
	flagRounds     = flag.Int("rounds", 7, "rounds (each side once per round, alternating which goes first)")
	flagSides      = flag.String("sides", "all", "comma-separated sides, or all: "+sideNames())
	flagMessages   = flag.Int64("messages", 1_000_000, "messages in the topic")
	flagPartitions = flag.Int("partitions", 8, "partitions of the topic")
	flagTopic      = flag.String("topic", "", "topic to read (empty: bench-throughput-<partitions>x<messages>); reused when it holds exactly -messages messages")
	flagWarmup     = flag.Bool("warmup", true, "read the topic once, untimed, before the rounds")
	flagProfile    = flag.String("profile", "", "folder: write a CPU profile of each timed pass there (<side>-r<round>.pprof)")
	flagTimeline   = flag.Bool("timeline", false, "print each pass's timeline: when each tenth of the messages came, and the quantiles of the partitions' first messages")
	flagZkLog      = flag.String("zklog", "", "file: zkgroup's sides log there, at debug level (appended)")
	flagBase       = flag.String("base", "sarama", "side the summary's ratios are to (one ratio per round, then the median)")
)

const valueLen = 100

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }

func allSides() []sideSpec { return append(append([]sideSpec(nil), builtinSides...), extraSides...) }

func sideNames() string {
	var n []string
	for _, s := range builtinSides {
		n = append(n, s.name)
	}
	return strings.Join(n, ",") + " (and any added to extraSides)"
}

func selectSides(tb testing.TB) []sideSpec {
	all := allSides()
	if *flagSides == "all" {
		return all
	}
	var out []sideSpec
	for _, name := range strings.Split(*flagSides, ",") {
		found := false
		for _, s := range all {
			if s.name == strings.TrimSpace(name) {
				out, found = append(out, s), true
			}
		}
		if !found {
			tb.Fatalf("-sides: unknown side %q", name)
		}
	}
	return out
}

// BenchmarkThroughput reads one pre-filled topic (1,000,000 messages of
// 100 B over 8 partitions) to its end with one member of a fresh group per
// pass, for each side once per round (-rounds, 7), alternating which side
// goes first. See ../README.md.
//
//	go test -run='^$' -bench=BenchmarkThroughput -benchtime=1x -timeout=60m ./throughput/ -args -rounds=7
func BenchmarkThroughput(b *testing.B) {
	sds := selectSides(b)
	cl := benchkit.Cluster(b)
	topic := benchkit.PrefilledTopic(b, cl, *flagTopic, "throughput", *flagPartitions, *flagMessages, valueLen)
	sub, err := subscription.Static(topic)
	if err != nil {
		b.Fatal(err)
	}
	seq := 0
	pass := func(sd sideSpec, round int) (figures, error) {
		seq++
		if *flagProfile != "" && round > 0 {
			stop, err := startProfile(filepath.Join(*flagProfile, fmt.Sprintf("%s-r%d.pprof", sd.name, round)))
			if err != nil {
				return figures{}, err
			}
			defer stop()
		}
		env := &passEnv{c: cl, topic: topic, sub: sub,
			group: fmt.Sprintf("bench-tp-%s-%d-%d", sd.name, os.Getpid(), seq)}
		c := newCounter(*flagPartitions, *flagMessages)
		if err := sd.pass(env, c); err != nil {
			return figures{}, err
		}
		if c.total.Load() != c.want || c.bad.Load() != 0 {
			return figures{}, fmt.Errorf("%d messages in order, %d out of order or repeated; want %d, 0", c.total.Load(), c.bad.Load(), c.want)
		}
		if *flagTimeline {
			benchkit.Say("   %s: %s", sd.name, c.timeline())
		}
		return c.figures(), nil
	}
	if *flagWarmup {
		for _, sd := range allSides() {
			if sd.name == "sarama" {
				if _, err := pass(sd, 0); err != nil {
					b.Fatalf("warm-up: %v", err)
				}
			}
		}
	}
	benchkit.Say("BenchmarkThroughput: topic %s: %d messages of %d B over %d partitions; %d round(s); sides %v; load average %s", topic, *flagMessages, valueLen, *flagPartitions, *flagRounds, names(sds), benchkit.LoadAvg())
	got := map[string][]figures{}
	b.ResetTimer()
	benchkit.Rounds(b, b.N, *flagRounds, sds, func(sd sideSpec) string { return sd.name }, pass, func(sd sideSpec, round int, f figures) {
		got[sd.name] = append(got[sd.name], f)
		benchkit.Say("   round %d %-20s start->last %9.0f msgs/s  steady %9.0f msgs/s  cpu %6.0f ns/msg (steady %6.0f)  first message after %7.1f ms  load %s",
			round, sd.name, f.e2e, f.steady, f.cpuPer, f.cpuSteady, f.firstMs, benchkit.LoadAvg())
	})
	b.StopTimer()
	summarize(b, sds, got)
}

func names(sds []sideSpec) []string {
	var n []string
	for _, s := range sds {
		n = append(n, s.name)
	}
	return n
}

// summarize prints each side's medians and its median ratio to the -base
// side (the ratio of each round, then the median of those).
func summarize(b *testing.B, sds []sideSpec, got map[string][]figures) {
	base := got[*flagBase]
	benchkit.Say("== BenchmarkThroughput summary: medians over %d round(s); ratios to %s are the median of each round's ratio", *flagRounds, *flagBase)
	benchkit.Say("   %-26s %12s %8s %12s %8s %10s %8s %10s %8s %10s", "side", "start->last", "ratio", "steady", "ratio", "cpu ns/msg", "ratio", "steady cpu", "ratio", "first ms")
	for _, sd := range sds {
		fs := got[sd.name]
		col := func(get func(figures) float64) (float64, float64) { return benchkit.MedianRatio(fs, base, get) }
		e2e, e2eR := col(func(f figures) float64 { return f.e2e })
		st, stR := col(func(f figures) float64 { return f.steady })
		cpu, cpuR := col(func(f figures) float64 { return f.cpuPer })
		cpuS, cpuSR := col(func(f figures) float64 { return f.cpuSteady })
		first, _ := col(func(f figures) float64 { return f.firstMs })
		benchkit.Say("   %-26s %12.0f %8.3f %12.0f %8.3f %10.0f %8.3f %10.0f %8.3f %10.1f", sd.name, e2e, e2eR, st, stR, cpu, cpuR, cpuS, cpuSR, first)
		b.ReportMetric(st, sd.name+"-steady-msgs/s")
	}
	benchkit.Say("   load average at the end: %s (the machine is shared: compare only figures of one run)", benchkit.LoadAvg())
}

// startProfile starts a CPU profile of the process into path.
func startProfile(path string) (stop func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

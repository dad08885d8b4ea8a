package daemon

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
)

// summarize prints each side's medians over the rounds and its median
// ratio (of each round's ratio) to its base side: kcat for the
// command-line consumers, the per-message mode for a batch mode. Then the
// daemon's goals (bench/README.md, "daemon") that the run can check.
func summarize(b *testing.B, sds []side, got map[string][]result) {
	benchkit.Say("== BenchmarkDaemon summary: medians over %d round(s); a ratio is the median of each round's ratio to the side named under vs", *flagRounds)
	benchkit.Say("   %-26s %8s %10s %-16s %6s %10s %6s %8s %6s %9s %9s %s", "side", "msgs", "msgs/s", "vs", "ratio", "from 1st", "ratio", "cpu µs", "ratio", "first ms", "SIGTERM", "exit")
	med := map[string]map[string]float64{}
	for _, sd := range sds {
		rs := got[sd.name]
		base := got[sd.base]
		col := func(get func(result) float64) (float64, float64) { return benchkit.MedianRatio(rs, base, get) }
		rate, rateR := col(result.rate)
		steady, steadyR := col(result.steadyRate)
		cpu, cpuR := col(result.cpuPerMsg)
		first, _ := col(func(r result) float64 { return ms(r.first) })
		term, _ := col(func(r result) float64 { return r.term.Seconds() })
		med[sd.name] = map[string]float64{"rate": rate, "rateR": rateR, "steadyR": steadyR, "cpuR": cpuR}
		var exits []string
		for _, r := range rs {
			if !slices.Contains(exits, r.exit) {
				exits = append(exits, r.exit)
			}
		}
		vs := sd.base
		if vs == "" || len(base) == 0 {
			vs = "-"
		}
		var want int64
		if len(rs) > 0 {
			want = rs[0].want
		}
		benchkit.Say("   %-26s %8d %10.0f %-16s %6s %10.0f %6s %8.2f %6s %9.1f %8.2fs %s",
			sd.name, want, rate, short(vs), ratio(rateR), steady, ratio(steadyR), cpu, ratio(cpuR), first, term, strings.Join(exits, ","))
		b.ReportMetric(rate, sd.name+"-msgs/s")
	}
	benchkit.Say("   (msgs/s: process start to the last message; from 1st: first message to the last; cpu: user+sys of the process and its children over its whole life, per message;")
	benchkit.Say("    first: process start to the first message (exec sides: to the first commit seen); SIGTERM: signal to exit, with the exit status)")
	goals(med)
	benchkit.Say("   load average at the end: %s (the machine is shared: compare only figures of one run)", benchkit.LoadAvg())
}

// goals prints the daemon's targets (bench/README.md, "daemon") that the
// sides run can check.
func goals(med map[string]map[string]float64) {
	check := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	if m, ok := med["zkgroup-stdout"]; ok && !math.IsNaN(m["cpuR"]) {
		benchkit.Say("   goal stdout vs kcat: cpu/msg ratio %.2f (≤ 1.0) at msgs/s ratio %.2f (≥ 1.5): %s",
			m["cpuR"], m["rateR"], check(m["cpuR"] <= 1 && m["rateR"] >= 1.5))
	}
	d := flagHTTPDelay.String()
	if m, ok := med["zkgroup-http-batch-"+d]; ok && !math.IsNaN(m["steadyR"]) {
		benchkit.Say("   goal http batch vs message at %s/request: from-1st ratio %.1f (≥ 10): %s", d, m["steadyR"], check(m["steadyR"] >= 10))
	}
	if m, ok := med["zkgroup-http-batch"]; ok {
		benchkit.Say("   goal http batch to a local endpoint: %.0f msgs/s (≥ 100,000): %s", m["rate"], check(m["rate"] >= 100_000))
	}
	if m, ok := med["zkgroup-exec-batch"]; ok && !math.IsNaN(m["steadyR"]) {
		benchkit.Say("   goal exec batch vs message: from-1st ratio %.1f (≥ 50): %s", m["steadyR"], check(m["steadyR"] >= 50))
	}
}

func ratio(r float64) string {
	if math.IsNaN(r) {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}

// short keeps the vs column narrow: the base side without "zkgroup-".
func short(s string) string { return strings.TrimPrefix(s, "zkgroup-") }

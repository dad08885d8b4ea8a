package scale

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
)

// memoryFile is where the process of spec writes its memory
// (-process-memory; "" when not set): the group (side and round) and the
// member's index, "base" for the baseline process.
func memoryFile(spec memberSpec) string {
	if *flagProcMemory == "" {
		return ""
	}
	return filepath.Join(*flagProcMemory, processName(spec))
}

// processName names spec's process in the files it writes: its group
// (side and round) and the member's index, "base" for the baseline
// process.
func processName(spec memberSpec) string {
	who := "base"
	if spec.Side != "" {
		who = fmt.Sprint(spec.Index)
	}
	return spec.Group + "-" + who
}

// writeMemory writes what this process's memory holds to path+".txt":
// its RSS (and its anonymous and file-backed parts: the binary's pages
// it touched are file-backed), the Go runtime's memory classes and
// goroutine counts (runtime/metrics) as they are and after a GC, its RSS
// once the GC returned what it could to the OS (debug.FreeOSMemory), and
// what it did over the window ("window" lines: see activity); and its
// heap profile after the GC to path+".heap" (go tool pprof
// -sample_index=inuse_space). Run after the window's figures were taken:
// the GC it forces is not in them.
func writeMemory(path string, window map[string]uint64) error {
	rss, anon, file := benchkit.RSS(), benchkit.StatusBytes("RssAnon"), benchkit.StatusBytes("RssFile")
	before := memClasses()
	runtime.GC()
	after := memClasses()
	debug.FreeOSMemory()
	var b strings.Builder
	fmt.Fprintf(&b, "rss %d\nrss-anon %d\nrss-file %d\nrss-after-free-os-memory %d\n", rss, anon, file, benchkit.RSS())
	names := make([]string, 0, len(before))
	for n := range before {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s %d %d\n", n, before[n], after[n])
	}
	names = names[:0]
	for n := range window {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "window %s %d\n", n, window[n])
	}
	if err := os.WriteFile(path+".txt", []byte(b.String()), 0o644); err != nil {
		return err
	}
	f, err := os.Create(path + ".heap")
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// memClasses reads the runtime's memory classes, heap goal and goroutine
// counts.
func memClasses() map[string]uint64 {
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if d.Kind == metrics.KindUint64 && (strings.HasPrefix(d.Name, "/memory/classes/") ||
			strings.HasPrefix(d.Name, "/sched/goroutines") || d.Name == "/gc/heap/goal:bytes") {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	m := make(map[string]uint64, len(samples))
	for _, s := range samples {
		m[s.Name] = s.Value.Uint64()
	}
	return m
}

// activity is what the process did so far that an idle window should
// hardly move: garbage collections, heap allocations, goroutines started
// (runtime/metrics), its user and system CPU and its context switches
// (getrusage). windowActivity subtracts two readings.
func activity() map[string]uint64 {
	samples := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/gc/heap/allocs:objects"},
		{Name: "/sched/goroutines-created:goroutines"},
	}
	metrics.Read(samples)
	m := make(map[string]uint64, len(samples)+4)
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			m[s.Name] = s.Value.Uint64()
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		m["user-us"] = uint64(ru.Utime.Nano() / 1e3)
		m["system-us"] = uint64(ru.Stime.Nano() / 1e3)
		m["voluntary-context-switches"] = uint64(ru.Nvcsw)
		m["involuntary-context-switches"] = uint64(ru.Nivcsw)
	}
	return m
}

// windowActivity is end less start, name by name.
func windowActivity(start, end map[string]uint64) map[string]uint64 {
	d := make(map[string]uint64, len(end))
	for n, v := range end {
		d[n] = v - start[n]
	}
	return d
}

// mbs converts bytes to MB (10^6, as benchkit.MB).
func mbs(b []float64) []float64 {
	out := make([]float64, len(b))
	for i, x := range b {
		out[i] = x / 1e6
	}
	return out
}

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

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
)

// memoryFile is where the process of spec writes its memory
// (-process-memory; "" when not set): the group (side and round) and the
// member's index, "base" for the baseline process.
func memoryFile(spec memberSpec) string {
	if *flagProcMemory == "" {
		return ""
	}
	who := "base"
	if spec.Side != "" {
		who = fmt.Sprint(spec.Index)
	}
	return filepath.Join(*flagProcMemory, spec.Group+"-"+who)
}

// writeMemory writes what this process's memory holds to path+".txt":
// its RSS (and its anonymous and file-backed parts: the binary's pages
// it touched are file-backed), the Go runtime's memory classes and goroutine counts
// (runtime/metrics) as they are and after a GC, and its RSS once the GC
// returned what it could to the OS (debug.FreeOSMemory); and its heap
// profile after the GC to path+".heap" (go tool pprof -sample_index=
// inuse_space). Run after the window's figures were taken: the GC it
// forces is not in them.
func writeMemory(path string) error {
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

// mbs converts bytes to MB (10^6, as benchkit.MB).
func mbs(b []float64) []float64 {
	out := make([]float64, len(b))
	for i, x := range b {
		out[i] = x / 1e6
	}
	return out
}

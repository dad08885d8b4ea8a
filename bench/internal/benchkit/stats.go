package benchkit

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Median of v (NaN when empty).
func Median(v []float64) float64 { return Percentile(v, 50) }

// Percentile p (0..100) of v by the nearest-rank method (NaN when empty):
// with 5 values p99 is the largest.
func Percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if p == 50 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// Seconds turns durations into seconds.
func Seconds(d []time.Duration) []float64 {
	out := make([]float64, len(d))
	for i, x := range d {
		out[i] = x.Seconds()
	}
	return out
}

// CPUTime is this process's user+system CPU time so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RSS is this process's resident set (VmRSS of /proc/self/status), in
// bytes; 0 when it cannot be read.
func RSS() int64 { return StatusBytes("VmRSS") }

// StatusBytes is a size field of /proc/self/status ("VmRSS", "RssAnon",
// "RssFile"), in bytes; 0 when it cannot be read.
func StatusBytes(name string) int64 {
	kb, _ := strconv.ParseInt(strings.TrimSuffix(statusField(name), " kB"), 10, 64) // "12345 kB"
	return kb << 10
}

// statusField is the value of a field of /proc/self/status, trimmed (""
// when it cannot be read).
func statusField(name string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// HeapInuse is the Go heap in use, in bytes.
func HeapInuse() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// MB formats bytes as MB (10^6).
func MB(b float64) string { return strconv.FormatFloat(b/1e6, 'f', 1, 64) + " MB" }

// MemoryClasses describes where the process's memory is, from
// runtime/metrics: live heap objects, heap the GC may reuse or return,
// goroutine stacks, and the GC's heap goal, in MB.
func MemoryClasses() string {
	names := []string{
		"/memory/classes/heap/objects:bytes",
		"/memory/classes/heap/unused:bytes",
		"/memory/classes/heap/free:bytes",
		"/memory/classes/heap/released:bytes",
		"/memory/classes/heap/stacks:bytes",
		"/memory/classes/os-stacks:bytes",
		"/gc/heap/goal:bytes",
		"/gc/heap/live:bytes",
		"/gc/scan/stack:bytes",          // the goroutines' stacks in use, as the last collection scanned them
		"/gc/stack/starting-size:bytes", // a new goroutine's stack (adaptive: the average at the last collection)
	}
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	var b strings.Builder
	for i, x := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		v := int64(0)
		if x.Value.Kind() == metrics.KindUint64 {
			v = int64(x.Value.Uint64())
		}
		short := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(x.Name, "/memory/classes/"), "/gc/"), ":bytes")
		if short == "stack/starting-size" {
			b.WriteString(fmt.Sprintf("%s %d KiB", short, v>>10))
			continue
		}
		b.WriteString(short + " " + MB(float64(v)))
	}
	fmt.Fprintf(&b, ", threads %d, goroutines %d", threads(), runtime.NumGoroutine())
	return b.String()
}

// threads is the process's OS thread count (0 if unreadable): each thread
// of a Go program without cgo holds stacks the heap/stacks class counts.
func threads() int {
	n, _ := strconv.Atoi(statusField("Threads"))
	return n
}

// LoadAvg is the first three fields of /proc/loadavg ("?" if unreadable):
// how busy the machine was when a figure was taken.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Count is one entry of a map of counts.
type Count struct {
	Key string
	N   int
}

// Largest returns the n largest counts of m, largest first (equal ones by
// key), and how many entries it left out.
func Largest(m map[string]int, n int) (top []Count, more int) {
	all := make([]Count, 0, len(m))
	for k, v := range m {
		all = append(all, Count{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].N > all[j].N || all[i].N == all[j].N && all[i].Key < all[j].Key })
	if len(all) <= n {
		return all, 0
	}
	return all[:n], len(all) - n
}

// GCWork is what the Go runtime has done so far: bytes allocated on the
// heap and collections completed (runtime/metrics). Two snapshots'
// difference is a window's allocation rate and its collections.
type GCWork struct {
	Allocs uint64 // bytes allocated on the heap since the process started
	Cycles uint64 // collections completed, forced or not
}

// Sub is what was done between from and w.
func (w GCWork) Sub(from GCWork) GCWork {
	return GCWork{Allocs: w.Allocs - from.Allocs, Cycles: w.Cycles - from.Cycles}
}

// ReadGCWork takes a GCWork snapshot.
func ReadGCWork() GCWork {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	var w GCWork
	if s[0].Value.Kind() == metrics.KindUint64 {
		w.Allocs = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		w.Cycles = s[1].Value.Uint64()
	}
	return w
}

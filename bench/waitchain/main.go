// Command waitchain reads a runtime trace of a bench run (BenchmarkJoinLeave
// writes one per event with ZKGROUP_BENCH_TRACE=dir) and explains the long
// waits of the goroutines that range over a member's messages: for each wait
// of at least -min, who woke it, what that goroutine had been waiting on,
// and so on up the chain (the partition manager, the fetch loop, the
// broker's socket). It answers "what held the messages": a lock, the
// member's loop, the fetcher, or the broker's answer.
//
//	go run ./waitchain -min 50ms /tmp/jl/zkgroup-join-0.trace
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// transition is one state change of a goroutine.
type transition struct {
	t        trace.Time
	from, to trace.GoState
	by       trace.GoID // the goroutine that made it (the waker, for Waiting -> Runnable)
	stack    string     // the waiting goroutine's stack, or the waker's
	reason   string
}

func main() {
	minWait := flag.Duration("min", 50*time.Millisecond, "the shortest wait explained")
	match := flag.String("match", "joinZkgroup.func3", "a frame of the goroutines whose waits are explained")
	depth := flag.Int("depth", 5, "how far up the chain of wakers")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: waitchain [-min D] [-match FRAME] file.trace")
		os.Exit(2)
	}
	hist, t0, err := read(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "waitchain:", err)
		os.Exit(1)
	}
	var ids []trace.GoID
	for id, h := range hist {
		for _, x := range h {
			if x.to == trace.GoWaiting && strings.Contains(x.stack, *match) {
				ids = append(ids, id)
				break
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	roots := map[string]int{}
	for _, id := range ids {
		var waitFrom *transition
		for i := range hist[id] {
			x := &hist[id][i]
			switch {
			case x.to == trace.GoWaiting:
				waitFrom = x
			case x.to == trace.GoRunning && waitFrom != nil:
				if d := x.t - waitFrom.t; time.Duration(d) >= *minWait {
					fmt.Printf("== g%d waited %s from +%s\n", id, ms(d), ms(waitFrom.t-t0))
					roots[explain(hist, t0, id, x.t, 1, *depth, *minWait/2)]++
				}
				waitFrom = nil
			}
		}
	}
	fmt.Println("== where the chains end (the innermost wait), count:")
	keys := make([]string, 0, len(roots))
	for k := range roots {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return roots[keys[i]] > roots[keys[j]] })
	for _, k := range keys {
		fmt.Printf("%5d  %s\n", roots[k], k)
	}
}

// explain prints goroutine id's last wait before at, who woke it, and
// (if the wait was long) the waker's own wait before that. It returns the
// innermost wait it printed: its reason and first frames.
func explain(hist map[trace.GoID][]transition, t0 trace.Time, id trace.GoID, at trace.Time, d, maxDepth int, long time.Duration) string {
	var w, u *transition
	for i := range hist[id] {
		x := &hist[id][i]
		if x.t > at {
			break
		}
		if x.to == trace.GoWaiting {
			w, u = x, nil
		}
		if x.from == trace.GoWaiting && x.to == trace.GoRunnable && w != nil {
			u = x
		}
	}
	ind := strings.Repeat("  ", d)
	if w == nil {
		fmt.Printf("%sg%d: no wait before +%s\n", ind, id, ms(at-t0))
		return "(no wait found)"
	}
	root := fmt.Sprintf("%s at %s", w.reason, firstFrames(w.stack, 3))
	fmt.Printf("%sg%d waited %s (%s) at %s\n", ind, id, ms(at-w.t), w.reason, w.stack)
	if u == nil {
		return root
	}
	if u.by == trace.NoGoroutine {
		fmt.Printf("%s  woken at +%s by the runtime (network poller or timer)\n", ind, ms(u.t-t0))
		return root
	}
	fmt.Printf("%s  woken at +%s by g%d at %s\n", ind, ms(u.t-t0), u.by, u.stack)
	if d < maxDepth && time.Duration(at-w.t) >= long {
		return explain(hist, t0, u.by, u.t, d+1, maxDepth, long)
	}
	return root
}

func firstFrames(stack string, n int) string {
	f := strings.Split(stack, " < ")
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " < ")
}

func read(path string) (map[trace.GoID][]transition, trace.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	r, err := trace.NewReader(f)
	if err != nil {
		return nil, 0, err
	}
	hist := map[trace.GoID][]transition{}
	var t0 trace.Time
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			return hist, t0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		if t0 == 0 {
			t0 = ev.Time()
		}
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		from, to := st.Goroutine()
		x := transition{t: ev.Time(), from: from, to: to, by: ev.Goroutine(), stack: frames(ev.Stack()), reason: st.Reason}
		if st.Stack != trace.NoStack && !(from == trace.GoWaiting && to == trace.GoRunnable) {
			x.stack = frames(st.Stack)
		}
		id := st.Resource.Goroutine()
		hist[id] = append(hist[id], x)
	}
}

func frames(s trace.Stack) string {
	var b []string
	for f := range s.Frames() {
		fn := f.Func
		if i := strings.LastIndex(fn, "/"); i >= 0 {
			fn = fn[i+1:]
		}
		b = append(b, fmt.Sprintf("%s:%d", fn, f.Line))
		if len(b) == 6 {
			break
		}
	}
	return strings.Join(b, " < ")
}

func ms(d trace.Time) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

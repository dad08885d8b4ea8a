package scale

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/subscription"
)

// BenchmarkIdleProcess flags.
var (
	flagProcMembers = flag.Int("process-members", 10, "BenchmarkIdleProcess: members, each in a process of its own")
	flagProcWindow  = flag.Duration("process-window", 60*time.Second, "BenchmarkIdleProcess: the measured idle window")
	flagProcMemory  = flag.String("process-memory", "", "BenchmarkIdleProcess: a directory where each process writes what its memory holds after the window (see writeMemory)")
)

// memberEnv carries a member process's memberSpec (JSON): set, the test
// binary runs that member (TestMain) instead of its tests.
const memberEnv = "ZKGROUP_BENCH_MEMBER"

// memberSpec is what a member process needs to join.
type memberSpec struct {
	Side       string            `json:"side"`
	Group      string            `json:"group"`
	Index      int               `json:"index"`
	Topics     []string          `json:"topics"`
	Partitions int               `json:"partitions"`
	Cluster    testcluster.State `json:"cluster"`
}

// BenchmarkIdleProcess: what an idle member costs in a process of its
// own, as a daemon or an embedding application runs it (BenchmarkIdle
// and BenchmarkScale's idle window share one process among the members,
// its runtime included). Per side and round: a baseline process (the
// same binary, no member) starts, then -process-members processes, each
// one member, join -every apart; once every partition is consumed the
// producer pauses, and after 8 s (in-flight records, fetch loops going
// idle) each process reports its own CPU time (getrusage) over
// -process-window, and its RSS at the end. A member's figures are over
// the baseline process's (what the Go runtime of an idle process costs
// alike on every side); the round's are medians over the members, the
// summary's medians over the rounds with the per-round ratios to the last
// side of -sides. With -process-memory=DIR each process then writes what
// its memory holds (writeMemory).
//
//	go test -run='^$' -bench=BenchmarkIdleProcess -benchtime=1x -timeout=30m ./scale/ \
//	    -args -sides=zkgroup,franz-go -partitions=1000 -topics=10 -process-members=5 \
//	    -rounds=3 -process-window=30s -warmup=false
func BenchmarkIdleProcess(b *testing.B) {
	P, T, M := *flagPartitions, *flagTopics, *flagProcMembers
	sds := sides(b)
	cl, topics, _, _, _, prod, done := setUpTopics(b, "proc", P, T, *flagRate)
	defer done()
	benchkit.Say("BenchmarkIdleProcess: %d partitions over %d topics, %d member processes joining %v apart, idle window %v; load average %s",
		P, T, M, *flagEvery, *flagProcWindow, benchkit.LoadAvg())
	results := runRounds(b, sds, *flagRounds, 3*time.Second, func(sd side, r int) procResult {
		res := runIdleProcesses(cl, topics, prod, sd, r, M)
		if res.failed != "" {
			benchkit.Say("== round %d, %s: RUN FAILED: %s", r+1, sd.name, res.failed)
		} else {
			benchkit.Say("== round %d, %s: idle CPU per member %.3f ms/s (median; %s), RSS %s (median; %s MB), over the baseline process's %.3f ms/s and %s; every partition consumed %s after the first join",
				r+1, sd.name, benchkit.Median(res.cpu), fmtList(res.cpu, "%.3f"), benchkit.MB(benchkit.Median(res.rss)), fmtList(mbs(res.rss), "%.1f"),
				res.baseCPU, benchkit.MB(res.baseRSS), secs(res.flow))
		}
		return res
	})
	base := sds[len(sds)-1].name
	for _, sd := range sds {
		var ok, baseOK []procResult
		for i, res := range results[sd.name] {
			if res.failed == "" && i < len(results[base]) && results[base][i].failed == "" {
				ok, baseOK = append(ok, res), append(baseOK, results[base][i])
			}
		}
		cpuOf := func(r procResult) float64 { return benchkit.Median(r.cpu) }
		cpu, cpuRatio := benchkit.MedianRatio(ok, baseOK, cpuOf)
		rss, rssRatio := benchkit.MedianRatio(ok, baseOK, func(r procResult) float64 { return benchkit.Median(r.rss) })
		ratios := benchkit.Ratios(ok, baseOK, cpuOf)
		benchkit.Say("summary %-8s (medians over %d rounds): idle CPU %.3f ms/s per member (%.2fx %s; per round %s), RSS %s (%.2fx)",
			sd.name, len(ok), cpu, cpuRatio, base, fmtList(ratios, "%.2f"), benchkit.MB(rss), rssRatio)
	}
}

// procResult is one side's run of BenchmarkIdleProcess.
type procResult struct {
	failed   string
	cpu, rss []float64 // per member: ms/s over the window, bytes at its end, over the baseline process's
	baseCPU  float64   // the baseline process's (same binary, no member) ms/s
	baseRSS  float64   // and RSS
	flow     time.Duration
}

func fmtList(v []float64, f string) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf(f, x)
	}
	return strings.Join(s, " ")
}

// memberProc is the parent's end of one member process.
type memberProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string // the process's stdout, line by line; closed at its end

	mu             sync.Mutex
	owned, flowing int
}

// startMember starts the member process of spec.
func startMember(spec memberSpec) (*memberProc, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0], "-zkgroup-strategy="+*flagZkStrategy, "-zkgroup-join-settle="+flagZkJoinSettle.String(),
		"-process-memory="+*flagProcMemory)
	cmd.Env = append(os.Environ(), memberEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &memberProc{cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			var o, f int
			if _, err := fmt.Sscanf(line, "state %d %d", &o, &f); err == nil {
				p.mu.Lock()
				p.owned, p.flowing = o, f
				p.mu.Unlock()
				continue
			}
			p.lines <- line
		}
	}()
	return p, nil
}

// ask sends cmd and returns the process's answer line.
func (p *memberProc) ask(cmd string, timeout time.Duration) (string, error) {
	if _, err := fmt.Fprintln(p.in, cmd); err != nil {
		return "", err
	}
	select {
	case l, ok := <-p.lines:
		if !ok {
			return "", fmt.Errorf("member process ended")
		}
		return l, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("no answer to %q in %v", cmd, timeout)
	}
}

// stop closes the member (asking it to leave) and waits for its process.
func (p *memberProc) stop() {
	_, _ = fmt.Fprintln(p.in, "close")
	_ = p.in.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

func runIdleProcesses(cl *testcluster.Cluster, topics []string, prod *benchkit.Producer, sd side, round, M int) (res procResult) {
	P := *flagPartitions
	group := fmt.Sprintf("bench-proc-%s-%d-%d", sd.name, round, time.Now().UnixNano()%1e9)
	benchkit.Say("-- round %d, %s: group %s; load average %s", round+1, sd.name, group, benchkit.LoadAvg())
	var procs []*memberProc
	defer func() {
		var wg sync.WaitGroup
		for _, p := range procs {
			wg.Go(p.stop)
		}
		wg.Wait()
	}()
	// What a member process needs of the cluster (testcluster.Attach).
	st := testcluster.State{ZooKeeper: cl.ZooKeeperAddr(), ZooKeeperConnect: cl.ZooKeeperConnect(), Brokers: cl.Addrs()}
	baseline, err := startMember(memberSpec{Group: group, Index: -1, Partitions: P, Cluster: st})
	if err != nil {
		res.failed = fmt.Sprintf("baseline process: %v", err)
		return res
	}
	procs = append(procs, baseline)
	t0 := time.Now()
	for i := range M {
		if i > 0 {
			time.Sleep(*flagEvery)
		}
		p, err := startMember(memberSpec{Side: sd.name, Group: group, Index: i, Topics: topics, Partitions: P, Cluster: st})
		if err != nil {
			res.failed = fmt.Sprintf("member %d: %v", i, err)
			return res
		}
		procs = append(procs, p)
	}
	// Every partition owned once and consumed since it was assigned.
	for end := time.Now().Add(*flagPhaseTimeout); ; time.Sleep(100 * time.Millisecond) {
		owned, flowing := 0, 0
		for _, p := range procs[1:] {
			p.mu.Lock()
			owned, flowing = owned+p.owned, flowing+p.flowing
			p.mu.Unlock()
		}
		if owned == P && flowing == P {
			res.flow = time.Since(t0)
			break
		}
		if time.Now().After(end) {
			res.failed = fmt.Sprintf("no convergence in %v: %d partitions owned, %d consumed, of %d", *flagPhaseTimeout, owned, flowing, P)
			return res
		}
	}
	prod.SetPaused(true)
	defer prod.SetPaused(false)
	time.Sleep(8 * time.Second)
	c0 := make([]float64, len(procs))
	for i, p := range procs {
		l, err := p.ask("start", 10*time.Second)
		if err == nil {
			_, err = fmt.Sscanf(l, "cpu %g", &c0[i])
		}
		if err != nil {
			res.failed = fmt.Sprintf("process %d (0: the baseline), start: %v (%q)", i, err, l)
			return res
		}
	}
	w0 := time.Now()
	time.Sleep(*flagProcWindow)
	cpu, rss := make([]float64, len(procs)), make([]float64, len(procs))
	for i, p := range procs {
		l, err := p.ask("stop", 10*time.Second)
		var c1 float64
		if err == nil {
			_, err = fmt.Sscanf(l, "cpu %g rss %g", &c1, &rss[i])
		}
		if err != nil {
			res.failed = fmt.Sprintf("process %d (0: the baseline), stop: %v (%q)", i, err, l)
			return res
		}
		// Each process's window runs from its start to its stop answer:
		// the asks take microseconds, so the parent's window is theirs.
		cpu[i] = (c1 - c0[i]) / 1e6 / time.Since(w0).Seconds()
	}
	res.baseCPU, res.baseRSS = cpu[0], rss[0]
	for i := 1; i < len(procs); i++ {
		res.cpu = append(res.cpu, cpu[i]-res.baseCPU)
		res.rss = append(res.rss, rss[i]-res.baseRSS)
	}
	return res
}

// runMemberProcess is a member process's main (TestMain, with memberEnv
// set): it joins as its spec says, writes "state OWNED FLOWING" whenever
// the partitions it owns, or those of them it consumed since it got them,
// change, and answers on stdin: "start" with "cpu NS" (its CPU time so
// far), "stop" with "cpu NS rss BYTES", and "close" by leaving and
// exiting. It returns the exit code.
func runMemberProcess(js string) int {
	flag.Parse()
	var spec memberSpec
	if err := json.Unmarshal([]byte(js), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "member process:", err)
		return 2
	}
	if *flagProcMemory != "" {
		runtime.MemProfileRate = diagnosticMemProfileRate
	}
	if spec.Side == "" { // the baseline: no member, the tracker a member process holds
		tr := newTracker(spec.Partitions)
		defer runtime.KeepAlive(tr)
		return serveProcess(nil, nil, memoryFile(spec), processName(spec)+".trace")
	}
	sd, err := sideByName(spec.Side)
	if err != nil {
		fmt.Fprintln(os.Stderr, "member process:", err)
		return 2
	}
	sub, err := subscription.Static(spec.Topics...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "member process:", err)
		return 2
	}
	env := &runEnv{c: testcluster.Attach(spec.Cluster), topic: spec.Topics[0], sub: sub, group: spec.Group,
		tr: newTracker(spec.Partitions), req: &benchkit.Requests{}}
	if len(spec.Topics) > 1 {
		env.setTopics(spec.Topics, spec.Partitions/len(spec.Topics))
	}
	m, err := sd.join(env, spec.Index)
	if err != nil {
		fmt.Fprintln(os.Stderr, "member process: join:", err)
		return 1
	}
	return serveProcess(m, func() (int, int) { return env.tr.ownedFlowing(spec.Index) }, memoryFile(spec), processName(spec)+".trace")
}

// serveProcess reports state (when set) and answers the parent's
// commands until "close" or the end of stdin, then closes m (when set).
// After answering "stop", it writes its memory to memFile (when set).
// With ZKGROUP_BENCH_TRACE set, it traces the window into traceName there.
func serveProcess(m member, state func() (owned, flowing int), memFile, traceName string) int {
	defer func() {
		if m != nil {
			m.Close()
		}
	}()
	var out sync.Mutex
	say := func(format string, a ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", a...)
	}
	stopState := make(chan struct{})
	stateDone := make(chan struct{})
	go func() {
		defer close(stateDone)
		if state == nil {
			return
		}
		last := [2]int{-1, -1}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopState:
				return
			case <-tick.C:
			}
			owned, flowing := state()
			if cur := [2]int{owned, flowing}; cur != last {
				say("state %d %d", owned, flowing)
				last = cur
			}
		}
	}()
	var atStart map[string]uint64
	stopTrace := func() {}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "start":
			close(stopState) // the state ticker would wake the idle member
			<-stateDone
			say("cpu %d", benchkit.CPUTime().Nanoseconds())
			if memFile != "" {
				atStart = activity()
			}
			stopTrace = diagnostic("ZKGROUP_BENCH_TRACE", traceName, "trace", trace.Start, trace.Stop)
		case "stop":
			say("cpu %d rss %d", benchkit.CPUTime().Nanoseconds(), benchkit.RSS())
			stopTrace()
			if memFile != "" {
				if err := writeMemory(memFile, windowActivity(atStart, activity())); err != nil {
					fmt.Fprintln(os.Stderr, "member process:", err)
				}
			}
		case "close":
			return 0
		}
	}
	return 0
}

// ownedFlowing returns how many partitions member m owns, and how many of
// them it delivered a message of since it got them.
func (t *tracker) ownedFlowing(m int) (owned, flowing int) {
	for i := range t.parts {
		x := &t.parts[i]
		x.mu.Lock()
		if x.owner == m {
			owned++
			if x.ownerProduced > 0 {
				flowing++
			}
		}
		x.mu.Unlock()
	}
	return owned, flowing
}

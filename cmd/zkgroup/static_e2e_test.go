package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// Rolling restarts with real processes: three `zkgroup run` daemons with
// instance_ids s0..s2 on 24 partitions, a producer writing 2,400 messages
// a second throughout; one daemon is restarted with the same instance_id
// (SIGTERM, or SIGKILL) within its restart_grace, or after it. Each test
// reads the owner nodes before and after, follows every daemon's stdout
// sink output (which daemon printed which partition, and when), and at
// the end checks what was printed against what was produced. It logs the
// other daemons' longest pause on the partitions they kept and the
// restarted daemon's partitions' longest unconsumed stretch: figures, not
// assertions.

const staticE2EParts = 24

// restartKind is how the restarted daemon stops.
type restartKind int

const (
	restartTerm      restartKind = iota // SIGTERM, back within the grace
	restartKill                         // SIGKILL, back within the grace
	restartPastGrace                    // SIGTERM, back once its partitions moved
)

// staticEnv is one rolling-restart test's group.
type staticEnv struct {
	c            *testcluster.Cluster
	group, topic string
	config       func(id string) string
	ms           []*member
	prod         *testcluster.Producer
	poll         *offsetPoller
	watch        *outWatch
	start        time.Time
}

func newStaticEnv(t *testing.T, extra string) *staticEnv {
	t.Helper()
	e := &staticEnv{c: testcluster.Shared(t), start: time.Now()}
	e.group, e.topic = testcluster.Name(t, "g"), testcluster.Name(t, "t")
	createTopic(t, e.c, e.topic, staticE2EParts, 1)
	e.config = func(id string) string {
		cfg := baseConfig(e.c, e.group, e.topic, "instance_id: "+id+"\n"+extra)
		if strings.Contains(extra, "session_timeout") { // YAML refuses repeated keys
			cfg = strings.Replace(cfg, "session_timeout: 6s\n", "", 1)
		}
		return cfg
	}
	e.poll = startOffsetPoller(t, e.c, e.group, e.topic, staticE2EParts)
	e.prod = startProducer(t, e.c, e.topic, staticE2EParts)
	dir := t.TempDir()
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("s%d", i)
		m := &member{name: id, out: filepath.Join(dir, id+".jsonl")}
		m.d = startDaemon(t, runOpts{config: e.config(id), stdout: m.out})
		e.ms = append(e.ms, m)
	}
	for _, m := range e.ms {
		m.d.ready(60 * time.Second)
	}
	e.watch = startOutWatch(t, e.ms)
	t.Logf("%s: 3 daemons ready", e.since())
	return e
}

func (e *staticEnv) since() string { return time.Since(e.start).Round(time.Millisecond).String() }

// owners reads the group's owner nodes: partition -> member id.
func (e *staticEnv) owners(t *testing.T) map[int32]string {
	t.Helper()
	conn := testcluster.ZooKeeper(t, e.c)
	defer conn.Close()
	dir := e.c.Chroot() + "/consumers/" + e.group + "/owners/" + e.topic
	ps, _, err := conn.Children(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]string{}
	for _, p := range ps {
		data, _, err := conn.Get(dir + "/" + p)
		if err != nil {
			continue // released meanwhile
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("owner node %s/%s", dir, p)
		}
		out[int32(n)] = string(data)
	}
	return out
}

// settledOwners waits until the group consumes steadily and the owner
// nodes name, for every partition, the daemon that prints it; it returns
// the owner nodes.
func (e *staticEnv) settledOwners(t *testing.T) map[int32]string {
	t.Helper()
	var owners map[int32]string
	var why string
	if !testcluster.Poll(60*time.Second, 200*time.Millisecond, func() bool {
		printed := awaitSettled(t, e.ms, staticE2EParts, 60*time.Second)
		owners = e.owners(t)
		for m, ps := range printed {
			for _, p := range ps {
				if owners[p] != m.name {
					why = fmt.Sprintf("partition %d printed by %s, owner node %q", p, m.name, owners[p])
					return false
				}
			}
		}
		return len(owners) == staticE2EParts
	}) {
		t.Fatalf("owner nodes and printers never agreed: %s", why)
	}
	return owners
}

// describeAway runs describe --json and returns the ids of the members
// away it lists.
func describeAway(t *testing.T, cfgFile string) []string {
	t.Helper()
	out, stderr, code := run(t, "describe", "--config", cfgFile, "--json")
	var d ops.Description
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil {
		t.Fatalf("describe --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	var ids []string
	for _, a := range d.Away {
		if a.GraceSeconds <= 0 || a.MarkerWritten.IsZero() {
			t.Errorf("describe: member away %+v without grace or marker time", a)
		}
		ids = append(ids, a.ID)
	}
	return ids
}

// cfgFile is the config file a daemon runs with (run --config FILE).
func cfgFile(d *proc) string { return d.cmd.Args[3] }

// TestStaticSIGTERMRestart: a daemon restarted with SIGTERM within its
// restart_grace (here the default: the session timeout) gets back exactly
// its partitions, nobody else claims or prints any of them meanwhile, and
// every message is printed exactly once. describe lists it as away while
// it is down; zkgroup leave refuses a running member, and makes a stopped
// one leave for good.
func TestStaticSIGTERMRestart(t *testing.T) {
	t.Parallel()
	testStaticRestart(t, restartTerm, "session_timeout: 10s\n")
}

// TestStaticKillRestart: the same with SIGKILL (restart_grace 20s): no
// partition moves, nothing is lost, and a message is printed twice only
// if the killed daemon had printed it at or past its last commit of the
// partition (printed first by the killed process, again by its restart).
func TestStaticKillRestart(t *testing.T) {
	t.Parallel()
	testStaticRestart(t, restartKill, "restart_grace: 20s\n")
}

// TestStaticRestartPastGrace: a daemon stopped with SIGTERM for longer
// than its restart_grace (2s): its partitions go unclaimed for the grace,
// then move to the others; it comes back as a member joining. Every
// message is printed exactly once.
func TestStaticRestartPastGrace(t *testing.T) {
	t.Parallel()
	testStaticRestart(t, restartPastGrace, "restart_grace: 2s\n")
}

func testStaticRestart(t *testing.T, kind restartKind, extra string) {
	e := newStaticEnv(t, extra)
	before := e.settledOwners(t)
	v := e.ms[1]
	var mine []int32
	for p, o := range before {
		if o == v.name {
			mine = append(mine, p)
		}
	}
	slices.Sort(mine)
	t.Logf("%s: settled; %s owns %v", e.since(), v.name, mine)

	if kind == restartTerm { // a running member is not told to leave
		if _, stderr, code := run(t, "leave", "--config", cfgFile(v.d)); code != 1 || !strings.Contains(stderr, "registered") {
			t.Errorf("leave of a running member: exit %d, %s", code, stderr)
		}
	}
	// The floor: the same measure over 3 s with no event.
	e.watch.open(before)
	time.Sleep(3 * time.Second)
	floor := e.watch.close()
	e.watch.open(before)
	var boundary int // v's lines printed by its first process
	var committedAtKill map[int32]int64
	stopAt := time.Now()
	switch kind {
	case restartTerm, restartPastGrace:
		if code := v.d.stop(30 * time.Second); code != 0 {
			t.Fatalf("%s exited %d after SIGTERM", v.name, code)
		}
	case restartKill:
		v.d.signal(syscall.SIGKILL)
		v.d.wait(10 * time.Second)
	}
	stopped := time.Now()
	boundary = len(v.lines(t))
	t.Logf("%s: %s stopped in %v", e.since(), v.name, stopped.Sub(stopAt).Round(time.Millisecond))
	switch kind {
	case restartKill:
		e.poll.awaitRounds(t, 2) // its partitions' commits are final: nobody else commits them
		committedAtKill = e.poll.committed()
	case restartTerm:
		if away := describeAway(t, cfgFile(e.ms[0].d)); !slices.Equal(away, []string{v.name}) {
			t.Errorf("describe while %s is down lists away %v", v.name, away)
		}
	case restartPastGrace:
		await(t, 30*time.Second, "the others owning "+v.name+"'s partitions", func() bool {
			o := e.owners(t)
			for _, p := range mine {
				if o[p] == "" || o[p] == v.name {
					return false
				}
			}
			return true
		})
		t.Logf("%s: %s's partitions owned by the others %v after it stopped", e.since(), v.name, time.Since(stopped).Round(time.Millisecond))
	}
	v.d = startDaemon(t, runOpts{config: e.config(v.name), stdout: v.out})
	readyAt := v.d.ready(60 * time.Second)
	t.Logf("%s: %s ready again %v after it stopped (%v after the signal)", e.since(), v.name,
		readyAt.Sub(stopped).Round(time.Millisecond), readyAt.Sub(stopAt).Round(time.Millisecond))
	after := e.settledOwners(t)
	w := e.watch.close()

	moved := 0
	for p, o := range before {
		if after[p] != o {
			moved++
		}
	}
	var others []string
	for _, m := range e.ms {
		if m != v {
			others = append(others, fmt.Sprintf("%s %v (no event: %v)", m.name, w.pause[m.name].Round(time.Millisecond),
				floor.pause[m.name].Round(time.Millisecond)))
		}
	}
	t.Logf("%s: owner nodes before and after differ on %d partitions; %d printed by another daemon than their owner meanwhile %v; the others' longest pause on their partitions: %s; %s's partitions' longest unconsumed stretch %v",
		e.since(), moved, len(w.foreign), w.foreign, strings.Join(others, ", "), v.name, w.stretch(mine).Round(time.Millisecond))
	switch kind {
	case restartTerm, restartKill:
		if moved != 0 || len(w.foreign) != 0 {
			t.Errorf("restart within the grace: %d partitions moved, printed by another daemon than their owner: %v", moved, w.foreign)
		}
	case restartPastGrace:
		for _, p := range mine {
			if !slices.Contains(w.foreign, p) {
				t.Errorf("partition %d of %s was not printed by another daemon past the grace", p, v.name)
			}
		}
		if s := w.stretch(mine); s < 2*time.Second {
			t.Errorf("%s's partitions unconsumed at most %v: shorter than the grace (2s)", v.name, s)
		}
	}

	produced := finishAll(t, e.prod, e.ms, e.ms)
	checkCommittedAtEnd(t, e.c, e.group, e.topic, staticE2EParts)
	e.poll.check(t)
	dups := duplicates(t, e.ms)
	switch kind {
	case restartTerm, restartPastGrace:
		if len(dups) != 0 {
			t.Errorf("%d messages printed twice (first %v)", len(dups), firstN(dups, 10))
		}
	case restartKill:
		first := map[printed]bool{}
		for _, r := range v.lines(t)[:boundary] {
			first[r] = true
		}
		for _, r := range dups {
			if !slices.Contains(mine, r.P) || !first[r] || r.O < committedAtKill[r.P] {
				t.Errorf("%v printed twice, not one the killed daemon printed at or past its last commit (%d)", r, committedAtKill[r.P])
			}
		}
	}
	total := 0
	for _, m := range e.ms {
		total += len(m.lines(t))
	}
	t.Logf("%s: %d messages produced, %d printed, %d twice", e.since(), len(produced), total, len(dups))

	if kind == restartTerm { // every daemon stopped: all three away
		if away := describeAway(t, cfgFile(e.ms[0].d)); !slices.Equal(away, []string{"s0", "s1", "s2"}) {
			t.Errorf("describe with every daemon stopped lists away %v", away)
		}
		if out, stderr, code := run(t, "leave", "--config", cfgFile(e.ms[0].d), "--instance-id", "s1"); code != 0 || !strings.Contains(out, "s1 left") {
			t.Errorf("leave of a stopped member: exit %d, %s%s", code, out, stderr)
		}
		if away := describeAway(t, cfgFile(e.ms[0].d)); !slices.Equal(away, []string{"s0", "s2"}) {
			t.Errorf("describe after s1 left lists away %v", away)
		}
		if _, stderr, code := run(t, "leave", "--config", cfgFile(e.ms[0].d), "--instance-id", "s1"); code != 1 || !strings.Contains(stderr, "no restart marker") {
			t.Errorf("leave of a member that left: exit %d, %s", code, stderr)
		}
	}
}

// duplicates returns the messages printed more than once, by any daemons.
func duplicates(t *testing.T, ms []*member) []printed {
	t.Helper()
	n := map[printed]int{}
	for _, m := range ms {
		for _, r := range m.lines(t) {
			n[r]++
		}
	}
	var out []printed
	for r, k := range n {
		if k > 1 {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b printed) int {
		if a.P != b.P {
			return int(a.P - b.P)
		}
		return int(a.O - b.O)
	})
	return out
}

// outWatch follows the daemons' stdout sink files every 5 ms: when each
// partition was last printed, and, over a window, each partition's
// longest gap between two prints (or from its last print to the window's
// end) and which daemons printed it.
type outWatch struct {
	ms   []*member
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	err      error
	off      []int64
	partial  [][]byte
	last     map[int32]time.Time
	inWindow bool
	owner    map[int32]string // at the window's opening
	gap      map[int32]time.Duration
	printers map[int32]map[string]bool
}

// watchResult is a closed window.
type watchResult struct {
	pause   map[string]time.Duration // per daemon: longest gap on the partitions it owned at the opening and printed alone
	gap     map[int32]time.Duration
	foreign []int32 // partitions printed by another daemon than their owner at the opening
}

// stretch is the longest gap of ps.
func (w watchResult) stretch(ps []int32) time.Duration {
	var d time.Duration
	for _, p := range ps {
		d = max(d, w.gap[p])
	}
	return d
}

func startOutWatch(t *testing.T, ms []*member) *outWatch {
	w := &outWatch{ms: ms, stop: make(chan struct{}), done: make(chan struct{}),
		off: make([]int64, len(ms)), partial: make([][]byte, len(ms)), last: map[int32]time.Time{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			for i := range ms {
				w.read(i)
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-w.stop:
		default:
			close(w.stop)
		}
		<-w.done
		if w.err != nil {
			t.Errorf("reading the daemons' output: %v", w.err)
		}
	})
	return w
}

// read takes the lines daemon i printed since the last read.
func (w *outWatch) read(i int) {
	f, err := os.Open(w.ms[i].out)
	if os.IsNotExist(err) {
		return
	}
	if err == nil {
		defer f.Close()
		_, err = f.Seek(w.off[i], io.SeekStart)
	}
	var b []byte
	if err == nil {
		b, err = io.ReadAll(f)
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.err = err
		return
	}
	w.off[i] += int64(len(b))
	b = append(w.partial[i], b...)
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		w.partial[i] = b
		return
	}
	w.partial[i] = append([]byte(nil), b[end+1:]...)
	seen := map[int32]bool{}
	for _, l := range bytes.Split(b[:end], []byte("\n")) {
		var r struct {
			Partition int32 `json:"partition"`
		}
		if err := json.Unmarshal(l, &r); err != nil {
			w.err = fmt.Errorf("%s printed %q: %w", w.ms[i].name, l, err)
			return
		}
		seen[r.Partition] = true
	}
	for p := range seen {
		if w.inWindow {
			if l, ok := w.last[p]; ok {
				w.gap[p] = max(w.gap[p], now.Sub(l))
			}
			if w.printers[p] == nil {
				w.printers[p] = map[string]bool{}
			}
			w.printers[p][w.ms[i].name] = true
		}
		w.last[p] = now
	}
}

// open starts a window; owner is each partition's owner now.
func (w *outWatch) open(owner map[int32]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inWindow, w.owner = true, owner
	w.gap, w.printers = map[int32]time.Duration{}, map[int32]map[string]bool{}
}

// close ends the window.
func (w *outWatch) close() watchResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	res := watchResult{pause: map[string]time.Duration{}, gap: map[int32]time.Duration{}}
	for p, o := range w.owner {
		g := max(w.gap[p], now.Sub(w.last[p]))
		res.gap[p] = g
		alone := true
		for by := range w.printers[p] {
			if by != o {
				alone = false
			}
		}
		if !alone {
			res.foreign = append(res.foreign, p)
			continue
		}
		res.pause[o] = max(res.pause[o], g)
	}
	slices.Sort(res.foreign)
	w.inWindow = false
	return res
}

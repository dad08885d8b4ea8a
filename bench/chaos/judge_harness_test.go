package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
)

// readSlack bounds how much later than printed the runner may read a
// line (two cores shared with a cluster): a commit recorded less than this
// before a run of prints began may be that run's own.
const readSlack = time.Second

// summary is the judged outcome of a run, as text.
type summary struct {
	b strings.Builder
}

func (s *summary) f(format string, args ...any) { fmt.Fprintf(&s.b, format+"\n", args...) }

func (s *summary) String() string { return s.b.String() }

// regression is a committed offset that went backwards.
type regression struct {
	p        int32
	from, to int64
	t        int64
}

func regressions(h map[int32][]commitEv) []regression {
	var out []regression
	for p, evs := range h {
		prev := int64(-1)
		for _, e := range evs {
			if prev >= 0 && e.off < prev {
				out = append(out, regression{p: p, from: prev, to: e.off, t: e.t})
			}
			prev = e.off
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].t < out[j].t })
	return out
}

// stint is a maximal run of consecutive prints of a partition by one
// incarnation.
type stint struct {
	inc         int32
	first, last int // indexes into the partition's prints
}

func (r *run) rel(t int64) float64 { return float64(t-r.t0) / 1e9 }

func wall(t int64) string { return time.Unix(0, t).UTC().Format("15:04:05.000") }

// judge analyses everything the run recorded.
func (r *run) judge() *summary {
	s := &summary{}
	col := r.col
	col.mu.Lock()
	defer col.mu.Unlock()
	sess := int64(r.session)
	bound := r.session + *flagRebalance

	s.f("")
	s.f("=== chaos summary: seed %d, %s schedule, %d partitions (replication %d), %d records/s, session %s, commit interval %s, strategy %s",
		*flagSeed, *flagDuration, r.partitions, *flagReplication, *flagRate, r.session, *flagCommit, *flagStrategy)
	s.f("    schedule start %s UTC; healed %s (+%.1fs); drained %s (+%.1fs after heal, ok=%v)",
		wall(r.t0), wall(r.healed), r.rel(r.healed), wall(r.drained), float64(r.drained-r.healed)/1e9, r.drainOK)

	// Faults by kind.
	s.f("")
	s.f("faults executed (%d):", len(r.faults))
	byKind := map[string]int{}
	errKind := map[string]int{}
	for _, f := range r.faults {
		byKind[f.Kind]++
		if f.Err != "" {
			errKind[f.Kind]++
		}
	}
	for _, k := range allKinds {
		if byKind[k] > 0 {
			s.f("  %-13s %3d  (errors %d)", k, byKind[k], errKind[k])
		}
	}
	for _, f := range r.faults {
		if f.Err != "" {
			s.f("  error: %s: %s", f.Fault, f.Err)
		}
	}

	// Index the prints.
	prints := col.prints
	sort.SliceStable(prints, func(i, j int) bool { return prints[i].t < prints[j].t })
	printed := make(map[pk]int, len(prints))
	firstPrint := make(map[pk]int64, len(prints))
	byPart := map[int32][]printEv{}
	mismatched := 0
	for _, e := range prints {
		k := pk{e.p, e.off}
		if printed[k] == 0 {
			firstPrint[k] = e.t
		}
		printed[k]++
		byPart[e.p] = append(byPart[e.p], e)
		if a, ok := col.acked[k]; ok && e.seq != a.seq {
			mismatched++
		}
	}
	var lost []pk
	for k := range col.acked {
		if printed[k] == 0 {
			lost = append(lost, k)
		}
	}
	sort.Slice(lost, func(i, j int) bool {
		if lost[i].p != lost[j].p {
			return lost[i].p < lost[j].p
		}
		return lost[i].off < lost[j].off
	})
	dups := 0
	for _, n := range printed {
		dups += n - 1
	}
	s.f("")
	s.f("messages: produced (acked) %d, produce errors %d; printed %d lines, %d distinct records, %d printed more than once (extra lines)",
		len(col.acked), col.produceErrs.Load(), len(prints), len(printed), dups)
	s.f("  LOST (acked, never printed): %d", len(lost))
	for i, k := range lost {
		if i == 10 {
			s.f("    ... and %d more", len(lost)-10)
			break
		}
		a := col.acked[k]
		s.f("    p%d@%d acked %s (+%.1fs)", k.p, k.off, wall(a.t), r.rel(a.t))
	}
	// Fencing tokens, as a sink outside Kafka would use them: per
	// partition, in the order the lines were read, keep the highest token
	// and refuse a line carrying a lower one (a stale owner's write).
	noToken, refused := 0, 0
	highest := map[int32]int64{}
	for _, e := range prints {
		if e.tok <= 0 {
			noToken++
			continue
		}
		if e.tok < highest[e.p] {
			if refused < 10 {
				s.f("    token sink refuses p%d@%d by %s at +%.1fs: token %d < %d%s", e.p, e.off, r.incName(e.inc), r.rel(e.t), e.tok, highest[e.p], r.faultNear(e.t))
			}
			refused++
			continue
		}
		highest[e.p] = e.tok
	}
	s.f("  fencing tokens: %d lines without one; a sink keeping the highest per partition refuses %d lines (stale owners' writes)", noToken, refused)
	if mismatched > 0 || len(col.garbled) > 0 {
		s.f("  printed values not matching the acked record: %d; unparsable stdout lines: %d", mismatched, len(col.garbled))
		for i, g := range col.garbled {
			if i == 5 {
				break
			}
			s.f("    %s", g)
		}
	}

	// Commit history.
	hist, herr := r.hist, r.histErr
	s.f("")
	if herr != nil {
		s.f("committed offsets from __consumer_offsets: could not read: %v", herr)
	} else {
		s.f("committed offsets from __consumer_offsets (%s, %d segment(s)): %d commits of the group", hist.Source, hist.Segs, hist.Records)
		regs := regressions(hist.ByPart)
		s.f("  REGRESSIONS (log): %d", len(regs))
		for i, g := range regs {
			if i == 40 {
				s.f("    ... and %d more", len(regs)-40)
				break
			}
			s.f("    p%d %d -> %d at %s (+%.1fs)%s", g.p, g.from, g.to, wall(g.t), r.rel(g.t), r.faultNear(g.t))
		}
	}
	pregs := regressions(col.polled)
	s.f("  regressions seen by the OffsetFetch poller (every 50 ms; %d polls, %d errors): %d", col.polls.Load(), col.pollErrs.Load(), len(pregs))
	for i, g := range pregs {
		if i == 20 {
			s.f("    ... and %d more", len(pregs)-20)
			break
		}
		s.f("    p%d %d -> %d at %s (+%.1fs)%s", g.p, g.from, g.to, wall(g.t), r.rel(g.t), r.faultNear(g.t))
	}

	// Redeliveries of committed records.
	commits := col.polled
	commitSrc := "poller"
	if herr == nil && hist.Records > 0 {
		commits, commitSrc = hist.ByPart, "log"
	}
	covered := map[int32][]commitEv{} // per partition: time-sorted, offsets as running max
	for p, evs := range commits {
		cp := append([]commitEv(nil), evs...)
		sort.SliceStable(cp, func(i, j int) bool { return cp[i].t < cp[j].t })
		mx := int64(-1)
		for i := range cp {
			if cp[i].off > mx {
				mx = cp[i].off
			}
			cp[i].off = mx
		}
		covered[p] = cp
	}
	coveredAt := func(p int32, off int64) (int64, bool) {
		cp := covered[p]
		i := sort.Search(len(cp), func(i int) bool { return cp[i].off > off })
		if i == len(cp) {
			return 0, false
		}
		return cp[i].t, true
	}
	type episode struct {
		p          int32
		inc        int32
		n          int
		from, to   int64
		start, end int64
		inWindow   bool
	}
	var eps []*episode
	cur := map[[2]int32]*episode{}
	seen := make(map[pk]bool, len(printed))
	redelIn, redelOut := 0, 0
	lastInc := map[int32]int32{}
	stintStart := map[int32]int64{}
	for _, e := range prints {
		if li, ok := lastInc[e.p]; !ok || li != e.inc {
			lastInc[e.p], stintStart[e.p] = e.inc, e.t
		}
		k := pk{e.p, e.off}
		if !seen[k] {
			seen[k] = true
			continue
		}
		// The commit must precede the start of the printer's run by more
		// than readSlack: a new owner's own commit of the burst it printed
		// first may be recorded before the runner read that burst.
		tc, ok := coveredAt(e.p, e.off)
		if !ok || tc >= stintStart[e.p]-int64(readSlack) {
			continue
		}
		in := r.inHardWindow(e.t)
		if in {
			redelIn++
		} else {
			redelOut++
		}
		key := [2]int32{e.p, e.inc}
		ep := cur[key]
		if ep == nil || e.t-ep.end > int64(5*time.Second) || ep.inWindow != in {
			ep = &episode{p: e.p, inc: e.inc, from: e.off, start: e.t, inWindow: in}
			cur[key] = ep
			eps = append(eps, ep)
		}
		ep.n++
		ep.to, ep.end = e.off, e.t
	}
	s.f("")
	s.f("REDELIVERIES of committed records (printed again by a run of prints that began more than %s after Kafka recorded a commit past them; commits from the %s):", readSlack, commitSrc)
	s.f("  outside hard-fault windows: %d; inside (kill -9, SIGSTOP, ZooKeeper or full cut, until end + session + %s): %d; episodes %d",
		redelOut, *flagRebalance, redelIn, len(eps))
	for i, ep := range eps {
		if i == 30 {
			s.f("    ... and %d more episodes", len(eps)-30)
			break
		}
		where := "outside"
		if ep.inWindow {
			where = "inside"
		}
		s.f("    p%d offsets %d..%d (%d) by %s at %s (+%.1fs), %s%s", ep.p, ep.from, ep.to, ep.n, r.incName(ep.inc), wall(ep.start), r.rel(ep.start), where, r.faultNear(ep.start))
	}

	// Two owners at once.
	ovs := twoOwners(byPart, sess)
	ovMsgs, inflight := 0, 0
	ovParts := map[int32]bool{}
	for _, o := range ovs {
		ovMsgs += o.n
		ovParts[o.p] = true
		if r.inflightAtStop(o) {
			inflight++
		}
	}
	s.f("")
	s.f("TWO OWNERS AT ONCE (a partition printed by one incarnation between two consecutive prints of another, of consecutive offsets less than a session timeout apart): %d episodes, %d lines, %d partitions",
		len(ovs), ovMsgs, len(ovParts))
	s.f("  of which one line within 2 s after a SIGCONT of the printing daemon (a message in flight at the SIGSTOP: the documented window): %d; others: %d",
		inflight, len(ovs)-inflight)
	for i, o := range ovs {
		if i == 30 {
			s.f("    ... and %d more", len(ovs)-30)
			break
		}
		tag := ""
		if r.inflightAtStop(o) {
			tag = " [in flight at SIGSTOP]"
		}
		s.f("    p%d: %s printed %d line(s) %s..%s (+%.1fs) inside %s's run (%.1fs after that run's first print)%s%s",
			o.p, r.incName(o.late), o.n, wall(o.start), wall(o.end), r.rel(o.start), r.incName(o.own), o.after, tag, r.faultNear(o.start))
	}

	// Brokers-only cuts: how long the cut member's partitions waited.
	ackedBy := map[int32][]commitEv{} // (ack time, offset) per partition
	for k, a := range col.acked {
		ackedBy[k.p] = append(ackedBy[k.p], commitEv{t: a.t, off: k.off})
	}
	for p := range ackedBy {
		sort.Slice(ackedBy[p], func(i, j int) bool { return ackedBy[p][i].t < ackedBy[p][j].t })
	}
	s.f("")
	s.f("BROKERS-ONLY CUTS: longest wait of a record of the cut member's partitions, acked during the cut, until some member printed it; bound = session %s + one rebalance %s = %s",
		r.session, *flagRebalance, bound)
	s.f("  %-8s %-6s %8s %6s %10s %8s  %s", "at", "daemon", "cut", "parts", "max wait", "vs bound", "printed after the cut began by")
	worst := time.Duration(0)
	for _, f := range r.faults {
		if f.Kind != kCutBrokers {
			continue
		}
		owned := map[int32]bool{}
		for p, ev := range byPart {
			i := sort.Search(len(ev), func(i int) bool { return ev[i].t >= f.Start })
			if i > 0 && col.incs[ev[i-1].inc].Daemon == f.Daemon {
				owned[p] = true
			}
		}
		var maxWait int64
		takers := map[string]int{}
		unprinted := 0
		for p := range owned {
			for _, a := range ackedBy[p] {
				if a.t < f.Start || a.t > f.End {
					continue
				}
				fp, ok := firstPrint[pk{p, a.off}]
				if !ok {
					unprinted++
					continue
				}
				if w := fp - a.t; w > maxWait {
					maxWait = w
				}
			}
			ev := byPart[p]
			i := sort.Search(len(ev), func(i int) bool { return ev[i].t >= f.Start })
			if i < len(ev) {
				who := "other"
				if col.incs[ev[i].inc].Daemon == f.Daemon {
					who = "itself"
				}
				takers[who]++
			}
		}
		w := time.Duration(maxWait)
		if w > worst {
			worst = w
		}
		verdict := "within"
		if w > bound {
			verdict = "OVER"
		}
		cut := time.Duration(f.End - f.Start)
		note := ""
		if cut < bound {
			note = " (cut shorter than the bound)"
		}
		if unprinted > 0 {
			note += fmt.Sprintf(" (%d never printed)", unprinted)
		}
		if !r.runningAt(f.Daemon, f.Start) {
			note += " (the daemon was not running when the cut began: nothing to measure)"
		} else if len(owned) == 0 {
			note += " (the daemon owned no partition when the cut began: nothing to measure)"
		}
		s.f("  %7.1fs d%-5d %7.1fs %6d %9.1fs %8s  itself %d, other %d%s", r.rel(f.Start), f.Daemon, cut.Seconds(), len(owned), w.Seconds(), verdict, takers["itself"], takers["other"], note)
	}
	s.f("  longest: %.1f s (bound %.1f s)", worst.Seconds(), bound.Seconds())

	// Every partition: the longest wait of an acked record until its first
	// print, whatever the cause (faults of other kinds included).
	type wait struct {
		p        int32
		w        int64
		off      int64
		at, when int64
		by       int32
	}
	var waits []wait
	firstBy := make(map[pk]int32, len(printed))
	for _, e := range prints {
		if _, ok := firstBy[pk{e.p, e.off}]; !ok {
			firstBy[pk{e.p, e.off}] = e.inc
		}
	}
	over := 0
	for p, as := range ackedBy {
		var worst wait
		for _, a := range as {
			fp, ok := firstPrint[pk{p, a.off}]
			if !ok {
				continue
			}
			if fp-a.t > int64(bound) {
				over++
			}
			if fp-a.t > worst.w {
				worst = wait{p: p, w: fp - a.t, off: a.off, at: a.t, when: fp, by: firstBy[pk{p, a.off}]}
			}
		}
		waits = append(waits, worst)
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i].w > waits[j].w })
	s.f("")
	s.f("LONGEST WAITS, any partition, any cause (acked -> first printed): %d records waited more than the bound %s; worst partitions:", over, bound)
	for i, w := range waits {
		if i == 8 {
			break
		}
		s.f("    p%d %.1fs: offset %d acked %s (+%.1fs), printed +%.1fs by %s%s", w.p, float64(w.w)/1e9, w.off, wall(w.at), r.rel(w.at), r.rel(w.when), r.incName(w.by), r.faultNear(w.at))
	}

	// End state.
	s.f("")
	atEnd := 0
	for p, h := range r.hwm {
		if r.committed[p] == h {
			atEnd++
		}
	}
	s.f("end state: committed = log end on %d/%d partitions", atEnd, len(r.hwm))
	s.f("final SIGTERM exits: %s", strings.Join(r.termExits, "; "))

	// Incarnations and their logs.
	s.f("")
	s.f("daemon processes: %d", len(col.incs))
	unexpected := 0
	for _, in := range col.incs {
		if !in.Expected && in.End != 0 {
			unexpected++
			s.f("  UNEXPECTED EXIT: daemon %d (%s, pid %d) at %s: %s (log %s)", in.Daemon, in.InstanceID, in.PID, wall(in.End), in.Exit, in.Stderr)
		}
	}
	s.f("  unexpected exits: %d", unexpected)
	errs, warns, dupKeys, panics := map[string]int{}, map[string]int{}, map[string]int{}, []string{}
	for _, in := range col.incs {
		scanLog(in.Stderr, errs, warns, dupKeys, &panics)
	}
	s.f("log lines at ERROR, by message: %s", topCounts(errs, 15))
	s.f("log lines at WARN, by message: %s", topCounts(warns, 15))
	s.f("log lines with a duplicate top-level key, by message (key): %s", topCounts(dupKeys, 10))
	s.f("panics / fatal errors / races / unparsable log lines: %d", len(panics))
	for i, p := range panics {
		if i == 10 {
			break
		}
		s.f("    %s", p)
	}
	if len(col.notes) > 0 {
		s.f("runner notes:")
		for _, n := range col.notes {
			s.f("  %s", n)
		}
	}
	s.f("logs: %s/logs; schedule: %s/schedule.txt", r.out, r.out)
	return s
}

// inHardWindow tells whether t falls in a hard fault's window: from its
// start to its end + session timeout + one rebalance.
func (r *run) inHardWindow(t int64) bool {
	for _, f := range r.faults {
		if hard[f.Kind] && t >= f.Start && t <= f.End+int64(r.session+*flagRebalance) {
			return true
		}
	}
	return false
}

// runningAt tells whether daemon d had a process at t.
func (r *run) runningAt(d int, t int64) bool {
	for _, in := range r.col.incs {
		if in.Daemon == d && in.Start <= t && (in.End == 0 || in.End > t) {
			return true
		}
	}
	return false
}

// inflightAtStop tells whether an overlap is a single line printed by a
// daemon within 2 s after the runner resumed it from a SIGSTOP: a message
// handed out before the pause, beyond any check (the documented window).
func (r *run) inflightAtStop(o overlap) bool {
	if o.n != 1 {
		return false
	}
	d := r.col.incs[o.late].Daemon
	for _, f := range r.faults {
		if f.Kind == kStop && f.Daemon == d && o.start >= f.End && o.start-f.End <= int64(2*time.Second) {
			return true
		}
	}
	return false
}

// faultNear names the faults active at t or ended less than a session
// timeout + rebalance before it.
func (r *run) faultNear(t int64) string {
	var out []string
	for i, f := range r.faults {
		if t >= f.Start && t <= f.End+int64(r.session+*flagRebalance) {
			who := fmt.Sprintf(" d%d", f.Daemon)
			switch f.Kind {
			case kBrokerKill:
				who = fmt.Sprintf(" broker %d", f.Broker)
			case kZKRestart:
				who = ""
			}
			out = append(out, fmt.Sprintf("#%d %s%s [+%.1f..+%.1f]", i+1, f.Kind, who, r.rel(f.Start), r.rel(f.End)))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; near " + strings.Join(out, ", ")
}

func (r *run) incName(n int32) string {
	in := r.col.incs[n]
	return fmt.Sprintf("d%d/%s#%d", in.Daemon, in.InstanceID, n)
}

// scanLog counts a daemon log's ERROR and WARN lines by message and
// collects lines that are not JSON (panics, runtime errors).
func scanLog(path string, errs, warns, dupKeys map[string]int, odd *[]string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t := string(line)
			if strings.Contains(t, "panic") || strings.Contains(t, "fatal error") || strings.Contains(t, "DATA RACE") || len(*odd) < 50 {
				*odd = append(*odd, fmt.Sprintf("%s: %.300s", path, t))
			}
			continue
		}
		if k := duplicateKey(line); k != "" {
			dupKeys[rec.Msg+" ("+k+")"]++
		}
		switch rec.Level {
		case "ERROR":
			errs[rec.Msg]++
		case "WARN":
			warns[rec.Msg]++
		}
	}
}

func topCounts(m map[string]int, n int) string {
	if len(m) == 0 {
		return "none"
	}
	counts, more := benchkit.Largest(m, n)
	var parts []string
	for _, c := range counts {
		parts = append(parts, fmt.Sprintf("%q %d", c.Key, c.N))
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("... %d more", more))
	}
	return "\n    " + strings.Join(parts, "\n    ")
}

// duplicateKey returns a top-level key that occurs twice in a JSON object
// line, or "".
func duplicateKey(line []byte) string {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		k, _ := t.(string)
		if seen[k] {
			return k
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}

// overlap is a run of prints of one incarnation inside another's.
type overlap struct {
	p          int32
	late, own  int32 // the incarnation printing inside the other's run, the owner
	n          int   // lines of the late run
	start, end int64
	after      float64 // s from the first print of the owner's run to the late run
}

// twoOwners finds, per partition (prints in time order), each run of
// prints by one incarnation that sits between two prints of another
// incarnation Y of consecutive offsets (Y went on from its own position,
// not from a commit) less than sess ns apart: Y owned the partition all
// along, so the sandwiched run was printed by a second owner. A handover
// and back is not one: the returning owner starts from the commit the
// other left, past its own position, or after a session timeout.
func twoOwners(byPart map[int32][]printEv, sess int64) []overlap {
	var ovs []overlap
	for p, ev := range byPart {
		var sts []stint
		for i, e := range ev {
			if len(sts) > 0 && sts[len(sts)-1].inc == e.inc {
				sts[len(sts)-1].last = i
				continue
			}
			sts = append(sts, stint{inc: e.inc, first: i, last: i})
		}
		for i := 1; i+1 < len(sts); i++ {
			a, b, c := sts[i-1], sts[i], sts[i+1]
			if a.inc != c.inc {
				continue
			}
			y1, y2 := ev[a.last], ev[c.first]
			if y2.off != y1.off+1 || y2.t-y1.t >= sess {
				continue
			}
			ovs = append(ovs, overlap{p: p, late: b.inc, own: a.inc, n: b.last - b.first + 1,
				start: ev[b.first].t, end: ev[b.last].t, after: float64(ev[b.first].t-ev[a.first].t) / 1e9})
		}
	}
	sort.Slice(ovs, func(i, j int) bool { return ovs[i].start < ovs[j].start })
	return ovs
}

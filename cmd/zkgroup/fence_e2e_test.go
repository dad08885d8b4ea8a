package main

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// Fault tests of the daemon's fencing: a member's commit must
// never take effect after its ownership may have ended, and a member that
// wakes from a pause hands out nothing another member took over. Each
// test runs daemons as system users of their own and cuts one of them off
// in the kernel (testcluster.NetFault), pauses it (SIGSTOP) or kills it
// (SIGKILL) while a producer writes and commits are due. It reads the
// group's committed offsets from Kafka every 50 ms throughout, and every
// commit Kafka applied from the group's partition of __consumer_offsets
// (which also sees a decrease that the owner's next commit undid before a
// read): any decrease fails the test. Each ends with nothing lost (every
// produced offset printed by some daemon) and, after SIGTERM of the live
// daemons (exit 0), committed == log end. They need root and iptables (CI
// runs as root; outside CI they are skipped without).

const (
	fenceSession = 6 * time.Second // baseConfig's session_timeout
	fenceParts   = 6
)

// fenceEnv is one fault test's group: daemons, producer, poller, cut.
type fenceEnv struct {
	c            *testcluster.Cluster
	group, topic string
	ms           []*member
	poll         *offsetPoller
	log          *commitLog
	prod         *testcluster.Producer
	nf           *testcluster.NetFault
	start        time.Time
}

// newFenceEnv creates a topic of fenceParts partitions, starts the
// producer, the poller, the commit log reader and n daemons, each as a
// user of its own, and waits until they are ready.
func newFenceEnv(t *testing.T, n int) *fenceEnv {
	t.Helper()
	e := &fenceEnv{start: time.Now()}
	e.nf = testcluster.NewNetFault(t) // skips (fails in CI) before the cluster starts
	e.c = testcluster.Shared(t)
	t.Logf("%s: cluster up", e.since())
	e.group, e.topic = testcluster.Name(t, "g"), testcluster.Name(t, "t")
	createTopic(t, e.c, e.topic, fenceParts, 3)
	e.poll = startOffsetPoller(t, e.c, e.group, e.topic, fenceParts)
	e.log = startCommitLog(t, e.c, e.group, e.topic)
	e.prod = startProducer(t, e.c, e.topic, fenceParts)
	dir := t.TempDir()
	// The Kafka bound is the session timeout, not the default 45 s: the
	// cuts here last seconds.
	cfg := baseConfig(e.c, e.group, e.topic, fmt.Sprintf("kafka_unreachable_timeout: %v\n", fenceSession))
	for i := 0; i < n; i++ {
		u := testcluster.AcquireNetUser(t)
		m := &member{name: fmt.Sprintf("d%d(%s)", i, u.Name), user: &u, out: filepath.Join(dir, fmt.Sprintf("d%d.jsonl", i))}
		m.d = startDaemonAs(t, runOpts{config: cfg, stdout: m.out}, &u)
		e.ms = append(e.ms, m)
	}
	for _, m := range e.ms {
		m.d.ready(60 * time.Second)
	}
	t.Logf("%s: %d daemons ready", e.since(), n)
	return e
}

// beyond reports whether Kafka's committed offset of every partition of
// ps is past last[p]+1: past any commit of a member that printed up to
// last (it commits at most the offset after what it printed).
func (e *fenceEnv) beyond(ps []int32, last map[int32]int64) bool {
	com := e.poll.committed()
	for _, p := range ps {
		c, ok := com[p]
		if !ok || c <= last[p]+1 {
			return false
		}
	}
	return true
}

// settle waits until the group consumes steadily (awaitSettled) with
// every partition committed, and returns what each member owns.
func (e *fenceEnv) settle(t *testing.T, ms []*member) map[*member][]int32 {
	t.Helper()
	owned := awaitSettled(t, ms, fenceParts, 60*time.Second)
	await(t, 30*time.Second, "a commit of every partition", func() bool { return len(e.poll.committed()) == fenceParts })
	return owned
}

// healAndDeliver heals the cut and waits until the kernel has sent
// whatever it held of m's to ports: the retransmission a fenced commit
// must not survive.
func (e *fenceEnv) healAndDeliver(t *testing.T, m *member, ports []int) {
	t.Helper()
	e.nf.Heal()
	healed := time.Now()
	await(t, 40*time.Second, "the bytes the cut held delivered", func() bool {
		n, err := testcluster.QueuedBytes(*m.user, ports...)
		return err == nil && n == 0
	})
	t.Logf("%s: held bytes delivered %v after the heal", e.since(), time.Since(healed).Round(time.Millisecond))
}

// cutFirst settles the group, cuts its first member off from ports
// (what names them, for the log) and returns the first member, the
// second, the partitions the first owned and when the cut began.
func (e *fenceEnv) cutFirst(t *testing.T, what string, ports []int) (a, b *member, pa []int32, cut time.Time) {
	t.Helper()
	a, b = e.ms[0], e.ms[1]
	pa = e.settle(t, e.ms)[a]
	if len(pa) == 0 {
		t.Fatalf("%s owns nothing after settling", a.name)
	}
	e.nf.Cut(*a.user, ports...)
	cut = time.Now()
	t.Logf("%s: %s, which owns %v, cut from %s; committed %v", e.since(), a.name, pa, what, e.poll.committed())
	return a, b, pa, cut
}

// heldBytes is how many bytes of m's to ports the kernel holds.
func (e *fenceEnv) heldBytes(t *testing.T, m *member, ports []int) int {
	t.Helper()
	held, err := testcluster.QueuedBytes(*m.user, ports...)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// wrapUp waits two rounds of the poller, logs the lines of each of logged
// that hold one of words, and finishes with live.
func (e *fenceEnv) wrapUp(t *testing.T, logged, live []*member, words ...string) {
	t.Helper()
	e.poll.awaitRounds(t, 2)
	for _, m := range logged {
		t.Logf("%s's logs:\n%s", m.name, logLines(m.d, words...))
	}
	e.finish(t, live)
}

// since is a duration since the test started, for timelines.
func (e *fenceEnv) since() string {
	return time.Since(e.start).Round(time.Millisecond).String()
}

// finish stops the producer, waits until every produced message was
// printed by some member, stops the live members (SIGTERM, exit 0), and
// checks committed == log end and that no committed offset went back.
func (e *fenceEnv) finish(t *testing.T, live []*member) {
	t.Helper()
	produced := finishAll(t, e.prod, e.ms, live)
	e.poll.awaitRounds(t, 2)
	end := checkCommittedAtEnd(t, e.c, e.group, e.topic, fenceParts)
	e.poll.check(t)
	e.log.check(t, end)
	total := 0
	for _, m := range e.ms {
		total += len(m.lines(t))
	}
	t.Logf("%s: %d messages produced, %d printed in all", e.since(), len(produced), total)
}

// fencePauses is how many pauses TestFencePause makes: whether the
// resumed member commits or hands out before it notices the pause is a
// race between its goroutines (each pause lost it about half the time
// before the fix), so one pause alone would often miss it.
const fencePauses = 3

// TestFencePause: a member paused (SIGSTOP) for 1.1x the session timeout,
// until another member took its partitions over and committed past
// everything it had printed, then resumed (SIGCONT): no committed offset
// goes back (its commit ticker fires before it saw the time pass), and it
// hands out none of the messages the new owner printed before the SIGCONT
// (a check of the session's state cannot see the pause) beyond the one
// message per partition it may have handed out before the SIGSTOP. Each
// member is paused in turn, fencePauses times in all.
func TestFencePause(t *testing.T) {
	t.Parallel()
	e := newFenceEnv(t, 2)
	for cycle := 0; cycle < fencePauses; cycle++ {
		a, b := e.ms[cycle%2], e.ms[(cycle+1)%2]
		owned := e.settle(t, e.ms)
		pa := owned[a]

		a.d.signal(syscall.SIGSTOP)
		stopped := time.Now()
		t.Logf("%s: pause %d: SIGSTOP %s, which owns %v; committed %v", e.since(), cycle+1, a.name, pa, e.poll.committed())
		aMax := maxPrinted(a.lines(t)) // stable: a is stopped
		await(t, 40*time.Second, "the pause past 1.1x the session timeout and "+b.name+" committing past "+a.name+"'s last printed offsets", func() bool {
			return time.Since(stopped) >= fenceSession*11/10 && e.beyond(pa, aMax)
		})
		before := map[printed]bool{}
		for _, r := range b.lines(t) {
			before[r] = true
		}
		nA := len(a.lines(t))
		com := e.poll.committed()
		a.d.signal(syscall.SIGCONT)
		t.Logf("%s: pause %d: SIGCONT after %v; %s had printed up to %v of its partitions, committed now %v",
			e.since(), cycle+1, time.Since(stopped).Round(time.Millisecond), a.name, aMax, com)

		e.settle(t, e.ms) // a rejoined
		// A message handed out before the SIGSTOP and written after the
		// SIGCONT is beyond any check (the documented window): the first
		// line of a partition after the SIGCONT is excused when it is the
		// one after a's last line of it before.
		var stale, excused []printed
		first := map[int32]bool{}
		for _, r := range a.lines(t)[nA:] {
			isFirst := !first[r.P]
			first[r.P] = true
			if !before[r] {
				continue
			}
			if last, ok := aMax[r.P]; isFirst && ok && r.O == last+1 {
				excused = append(excused, r)
				continue
			}
			stale = append(stale, r)
		}
		if len(excused) > 0 {
			t.Logf("pause %d: after SIGCONT %s printed %v, handed out before the SIGSTOP (excused)", cycle+1, a.name, excused)
		}
		if len(stale) > 0 {
			t.Errorf("pause %d: after SIGCONT %s handed out %d messages %s had printed before the SIGCONT (first %v)",
				cycle+1, a.name, len(stale), b.name, firstN(stale, 10))
		}
	}
	e.wrapUp(t, e.ms, e.ms, "commit", "expired", "claim lost", "suspend")
}

// TestFencePartition: a member cut off from ZooKeeper and the brokers
// (iptables DROP) while its commits are in flight, until its session
// expired and another member took its partitions over and committed past
// everything it had printed; then the cut heals and the kernel
// retransmits what it held: no committed offset goes back.
func TestFencePartition(t *testing.T) {
	t.Parallel()
	e := newFenceEnv(t, 2)
	brokers := e.c.BrokerPorts()
	a, b, pa, cut := e.cutFirst(t, "ZooKeeper and the brokers", append(e.c.ZooKeeperPorts(), brokers...))
	var aMax map[int32]int64
	await(t, 45*time.Second, b.name+" committing past "+a.name+"'s last printed offsets", func() bool {
		aMax = maxPrinted(a.lines(t))
		return e.beyond(pa, aMax)
	})
	t.Logf("%s: healing after %v; %d bytes to the brokers held; %s had printed up to %v, committed now %v",
		e.since(), time.Since(cut).Round(time.Millisecond), e.heldBytes(t, a, brokers), a.name, aMax, e.poll.committed())
	e.healAndDeliver(t, a, brokers)
	e.settle(t, e.ms) // a rejoined
	e.wrapUp(t, []*member{a}, e.ms, "commit", "expired", "claim lost", "suspend")
}

// TestFenceKill: a member cut off from the brokers only (it keeps its
// session and its partitions) until a commit of its is held in the
// kernel, then killed (SIGKILL); once its session expired and another
// member took its partitions over and committed past everything it had
// printed, the cut heals and the kernel sends the dead process's queued
// bytes: no committed offset goes back.
func TestFenceKill(t *testing.T) {
	t.Parallel()
	e := newFenceEnv(t, 2)
	brokers := e.c.BrokerPorts()
	a, b, pa, cut := e.cutFirst(t, "the brokers", brokers)
	// a hands out what it had fetched, acks it and commits: the commit
	// waits in the kernel. (A client that tore its connections down has
	// nothing held: after 5 s the kill goes ahead without.)
	lastN, lastChange := -1, time.Now()
	await(t, 15*time.Second, a.name+" quiet, with bytes held by the cut", func() bool {
		if n := len(a.lines(t)); n != lastN {
			lastN, lastChange = n, time.Now()
			return false
		}
		held, err := testcluster.QueuedBytes(*a.user, brokers...)
		return err == nil && (held > 0 || time.Since(cut) > 5*time.Second) &&
			time.Since(lastChange) > 500*time.Millisecond && time.Since(cut) > time.Second
	})
	a.d.signal(syscall.SIGKILL)
	a.d.wait(10 * time.Second)
	killed := time.Now()
	held := e.heldBytes(t, a, brokers)
	aMax := maxPrinted(a.lines(t))
	t.Logf("%s: SIGKILL %s %v into the cut; %d bytes to the brokers held by its dead sockets; it had printed up to %v",
		e.since(), a.name, killed.Sub(cut).Round(time.Millisecond), held, aMax)
	await(t, 40*time.Second, b.name+" committing past "+a.name+"'s last printed offsets", func() bool {
		return e.beyond(pa, aMax)
	})
	t.Logf("%s: healing %v after the kill; committed %v", e.since(), time.Since(killed).Round(time.Millisecond), e.poll.committed())
	e.healAndDeliver(t, a, brokers)
	e.wrapUp(t, []*member{a}, []*member{b}, "commit", "expired", "claim lost", "suspend")
}

// TestFenceBrokersCut: a member cut off from the brokers only (iptables;
// it keeps its ZooKeeper session) leaves the group once no broker answered
// it for kafka_unreachable_timeout (here the session timeout), so its
// partitions move to the other member within that bound and one
// rebalance, instead of standing still for as long as the cut lasts; it
// joins again once the cut heals. Nothing is lost, no committed offset
// goes back, and after the drain committed == log end.
func TestFenceBrokersCut(t *testing.T) {
	t.Parallel()
	e := newFenceEnv(t, 2)
	a, b, pa, cut := e.cutFirst(t, "the brokers", e.c.BrokerPorts())
	// b cannot take a's partitions over before a's session or the Kafka
	// bound runs out: what it printed of them is from before the cut.
	bBefore := maxPrinted(b.lines(t))
	// The bound (6 s) plus one rebalance; the slack is for a loaded CI
	// machine (the measured stall is logged).
	const limit = fenceSession + 10*time.Second
	await(t, limit, b.name+" consuming every partition of "+a.name, func() bool {
		got := maxPrinted(b.lines(t))
		for _, p := range pa {
			prev, had := bBefore[p]
			if now, ok := got[p]; !ok || had && now <= prev {
				return false
			}
		}
		return true
	})
	stall := time.Since(cut)
	t.Logf("%s: %s consumes %v %v after the cut (bound %v + one rebalance)", e.since(), b.name, pa, stall.Round(time.Millisecond), fenceSession)
	// While the cut lasts, a stays out: over awaitSettled's window (a
	// second at least) b prints every partition and a prints nothing.
	n := len(a.lines(t))
	if owned := awaitSettled(t, []*member{b}, fenceParts, 30*time.Second); len(owned[b]) != fenceParts {
		t.Fatalf("%s owns %v while %s is cut off, want all %d partitions", b.name, owned[b], a.name, fenceParts)
	}
	if m := len(a.lines(t)); m != n {
		t.Errorf("%s printed %d messages while out of the group", a.name, m-n)
	}
	e.nf.Heal()
	t.Logf("%s: healed %v after the cut", e.since(), time.Since(cut).Round(time.Millisecond))
	e.settle(t, e.ms) // a joined again
	e.wrapUp(t, []*member{a}, e.ms, "kafka", "left", "joined", "claim")
}

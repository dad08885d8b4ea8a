package manager_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// The ensemble fault tests run three members of a group on a 3-server
// ZooKeeper ensemble, under load, through the faults a ZooKeeper ensemble
// has in production: its leader killed, the server a member is connected
// to killed, a server (a follower, then the leader) cut off from the
// other two (it drops its clients), and every server restarted one at a
// time. Each member's session must move to another server within its
// timeout, so that nothing notices beyond a pause: nothing lost or
// delivered twice, no partition with two owners, no committed offset
// going backwards, no rebalance, no session replaced, and nothing handed
// out while a member's session is suspended.

// ensembleSession is the members' session timeout: ZooKeeper's
// maxSessionTimeout in the test cluster (20 ticks of 500 ms), room for an
// election and a reconnect.
const ensembleSession = 10 * time.Second

// ensembleParts is the partitions of each case's topic.
const ensembleParts = 12

func TestEnsembleFaults(t *testing.T) {
	c := testcluster.Start(t, testcluster.Brokers(1), testcluster.ZooKeepers(3))
	ctx := context.Background()

	t.Run("KillLeader", func(t *testing.T) {
		r := startEnsembleRun(t, c)
		leader := c.ZooKeeperLeader()
		if leader == 0 {
			t.Fatal("no ZooKeeper leader")
		}
		r.fault(fmt.Sprintf("kill -9 of the leader, server %d", leader), func() {
			if err := c.KillZooKeeperServer(leader); err != nil {
				t.Fatal(err)
			}
			took := testcluster.Await(t, 30*time.Second, 20*time.Millisecond, "a new leader", func() bool { return c.ZooKeeperLeader() != 0 })
			t.Logf("server %d leads %v after the kill", c.ZooKeeperLeader(), took.Round(time.Millisecond))
			r.awaitMoved(r.from, r.faultAt, leader)
		})
		r.restart(ctx, leader)
		r.finish()
	})

	t.Run("KillMembersServer", func(t *testing.T) {
		r := startEnsembleRun(t, c)
		victim := r.busyServer(false)
		r.fault(fmt.Sprintf("kill -9 of server %d (%s), serving %s", victim, c.ZooKeeperMode(victim), r.on(victim)), func() {
			if err := c.KillZooKeeperServer(victim); err != nil {
				t.Fatal(err)
			}
			r.awaitMoved(r.from, r.faultAt, victim)
		})
		r.restart(ctx, victim)
		r.finish()
	})

	cut := func(t *testing.T, leader bool) {
		r := startEnsembleRun(t, c)
		victim := r.busyServer(true)
		if leader {
			victim = c.ZooKeeperLeader()
		}
		var cut *testcluster.ZooKeeperCut
		r.fault(fmt.Sprintf("server %d (%s), serving %s, cut off from the other two", victim, c.ZooKeeperMode(victim), r.on(victim)), func() {
			cut = testcluster.IsolateZooKeeper(t, c, victim)
			took := testcluster.Await(t, 30*time.Second, 20*time.Millisecond, "the cut server to stop serving", func() bool { return c.ZooKeeperMode(victim) == "" })
			t.Logf("server %d stopped serving %v after the cut", victim, took.Round(time.Millisecond))
			r.awaitMoved(r.from, r.faultAt, victim)
			took = testcluster.Await(t, 30*time.Second, 20*time.Millisecond, "a leader among the other two", func() bool { return c.ZooKeeperLeader() != 0 })
			t.Logf("server %d leads %v after the cut", c.ZooKeeperLeader(), time.Since(r.faultAt).Round(time.Millisecond))
		})
		// The cut holds on while the group consumes; the server stays out.
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if m := c.ZooKeeperMode(victim); m != "" {
				t.Fatalf("the cut server %d serves again during the cut (%s)", victim, m)
			}
		}
		if err := cut.Heal(); err != nil {
			t.Fatal(err)
		}
		took := testcluster.Await(t, 30*time.Second, 20*time.Millisecond, "the healed server to serve", func() bool { return c.ZooKeeperMode(victim) != "" })
		t.Logf("healed: server %d serves again (%s) after %v", victim, c.ZooKeeperMode(victim), took.Round(time.Millisecond))
		r.finish()
	}
	t.Run("CutServer", func(t *testing.T) { cut(t, false) })
	t.Run("CutLeader", func(t *testing.T) { cut(t, true) })

	t.Run("RollingRestart", func(t *testing.T) {
		r := startEnsembleRun(t, c)
		r.fault("every server restarted (SIGTERM) one at a time", func() {
			for n := 1; n <= c.ZooKeeperServers(); n++ {
				mode, on, from := c.ZooKeeperMode(n), r.on(n), r.servers()
				start := time.Now()
				if err := c.StopZooKeeperServer(n); err != nil {
					t.Fatal(err)
				}
				r.awaitMoved(from, start, n)
				if err := c.StartZooKeeperServer(ctx, n); err != nil {
					t.Fatal(err)
				}
				if err := c.WaitZooKeeper(ctx); err != nil {
					t.Fatal(err)
				}
				t.Logf("server %d (%s, serving %s) restarted and the ensemble serves again after %v; leader now %d",
					n, mode, on, time.Since(start).Round(time.Millisecond), c.ZooKeeperLeader())
			}
		})
		r.finish()
	})

	// Beyond a single server's fault: two of three servers down at once,
	// so the third has no quorum and serves nobody, for longer than 2/3
	// of the session timeout. Every member suspends (its lease ended), and
	// must hand out nothing until the quorum is back. The new leader gives
	// every session a fresh timeout, so the sessions survive and the group
	// goes on as it was.
	t.Run("QuorumLost", func(t *testing.T) {
		r := startEnsembleRun(t, c)
		leader := c.ZooKeeperLeader()
		other := leader%c.ZooKeeperServers() + 1
		r.fault(fmt.Sprintf("servers %d (leader) and %d stopped (SIGTERM) until every member suspends", leader, other), func() {
			for _, n := range []int{leader, other} {
				if err := c.StopZooKeeperServer(n); err != nil {
					t.Fatal(err)
				}
			}
			took := await(t, 2*ensembleSession, "every member suspended", func() bool {
				for _, in := range r.ins {
					if in.c.Stats().SessionHealthy {
						return false
					}
				}
				return true
			})
			t.Logf("every member suspended %v after the stop", took.Round(time.Millisecond))
			// Kafka answers throughout: nothing may be committed while every
			// member is suspended.
			com0 := committed(t, c, r.group, r.topic, ensembleParts)
			time.Sleep(time.Second) // the group stays suspended while the producer writes on
			if com1 := committed(t, c, r.group, r.topic, ensembleParts); !maps.Equal(com0, com1) {
				t.Errorf("offsets committed while every member was suspended: %v, then %v", com0, com1)
			}
			for _, n := range []int{leader, other} {
				if err := c.StartZooKeeperServer(ctx, n); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("quorum back %v after the stop: leader %d", time.Since(r.faultAt).Round(time.Millisecond), c.ZooKeeperLeader())
		})
		r.finish()
	})
}

// ensembleRun is one case: a topic, three members consuming it with a
// producer writing throughout, and the watches of what must not happen.
type ensembleRun struct {
	t            *testing.T
	c            *testcluster.Cluster
	topic, group string
	rec          *recorder
	ins          []*instance
	prod         *testcluster.Producer
	offsets      *offsetWatch
	health       *healthWatch
	before       map[string]manager.Stats
	from         map[string]int // the members' servers before the fault
	faultAt      time.Time
}

// startEnsembleRun starts the members, waits until they share the
// partitions, starts the producer and the watches, and waits until every
// member consumes.
func startEnsembleRun(t *testing.T, c *testcluster.Cluster) *ensembleRun {
	if err := c.WaitZooKeeper(t.Context()); err != nil {
		t.Fatal(err)
	}
	topic, group, sub := newTopicRF(t, c, ensembleParts, 1)
	r := &ensembleRun{t: t, c: c, topic: topic, group: group, rec: newRecorder(t)}
	long := func(cfg *manager.Config) { cfg.SessionTimeout = ensembleSession }
	for _, name := range []string{"a", "b", "c"} {
		r.ins = append(r.ins, join(t, c, r.group, sub, name, r.rec, joinOpts{strict: true, shuffle: true, configure: long}))
	}
	await(t, 60*time.Second, "3 balanced", func() bool { return balanced(ensembleParts, r.ins...) })
	r.offsets = watchOffsets(t, c, r.group, r.topic, ensembleParts)
	r.prod = testcluster.StartProducer(t, c, r.topic, ensembleParts, 0, 24, 50*time.Millisecond)
	await(t, 30*time.Second, "every member consuming", func() bool {
		for _, in := range r.ins {
			if r.rec.By(in.name) == 0 {
				return false
			}
		}
		return true
	})
	await(t, 30*time.Second, "every session on a server", func() bool { return len(r.servers()) == len(r.ins) })
	r.before = map[string]manager.Stats{}
	for _, in := range r.ins {
		s := in.c.Stats()
		if !s.SessionHealthy {
			t.Fatalf("%s: session not healthy before the fault", in.name)
		}
		r.before[in.name] = s
	}
	r.health = watchHealth(r.rec, r.ins)
	return r
}

// servers returns the server each member's session is connected to (a
// member between servers is missing).
func (r *ensembleRun) servers() map[string]int {
	sessions := r.c.ZooKeeperSessions()
	out := map[string]int{}
	for _, in := range r.ins {
		if n := sessions[in.c.Stats().SessionID]; n != 0 {
			out[in.name] = n
		}
	}
	return out
}

// on names the members connected to server n.
func (r *ensembleRun) on(n int) string {
	var names []string
	for name, at := range r.servers() {
		if at == n {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "no member"
	}
	return strings.Join(names, ", ")
}

// busyServer returns a server some member is connected to: a follower
// if one serves a member (the leader's own fault is a case of its own),
// else the leader. With notLeader, never the leader (a follower then,
// whether it serves a member or not).
func (r *ensembleRun) busyServer(notLeader bool) int {
	leader := r.c.ZooKeeperLeader()
	at := r.servers()
	for _, in := range r.ins {
		if n := at[in.name]; n != 0 && n != leader {
			return n
		}
	}
	if notLeader {
		for n := 1; n <= r.c.ZooKeeperServers(); n++ {
			if n != leader {
				return n
			}
		}
	}
	return at[r.ins[0].name]
}

// fault runs do (the fault, returning once the members moved off the
// servers it took away) and logs how long it took.
func (r *ensembleRun) fault(what string, do func()) {
	r.from = r.servers()
	r.t.Logf("fault: %s; members on %v, leader %d", what, r.from, r.c.ZooKeeperLeader())
	r.faultAt = time.Now()
	do()
	r.t.Logf("fault done after %v; members on %v", time.Since(r.faultAt).Round(time.Millisecond), r.servers())
}

// awaitMoved waits until every member is connected to a server other
// than gone; it logs when each member that was on another server than
// before (from) got there, measured from since.
func (r *ensembleRun) awaitMoved(from map[string]int, since time.Time, gone int) {
	r.t.Helper()
	moved := map[string]time.Duration{}
	testcluster.Await(r.t, ensembleSession, 20*time.Millisecond, "every member's session on another server within its timeout", func() bool {
		now := r.servers()
		for _, in := range r.ins {
			n, ok := now[in.name]
			if !ok || n == gone {
				return false
			}
			if _, seen := moved[in.name]; !seen && n != from[in.name] {
				moved[in.name] = time.Since(since)
			}
		}
		return true
	})
	now := r.servers()
	for _, in := range r.ins {
		if d, ok := moved[in.name]; ok {
			r.t.Logf("  %s's session 0x%x moved from server %d to %d in %v", in.name, in.c.Stats().SessionID, from[in.name], now[in.name], d.Round(time.Millisecond))
		}
	}
}

// restart starts server n again after its fault.
func (r *ensembleRun) restart(ctx context.Context, n int) {
	start := time.Now()
	if err := r.c.StartZooKeeperServer(ctx, n); err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("server %d restarted: %s after %v", n, r.c.ZooKeeperMode(n), time.Since(start).Round(time.Millisecond))
}

// finish lets the group consume a while after the fault, stops the
// producer, and checks everything: every message consumed once, no two
// owners, no commit going backwards, commits up to the end, the same
// sessions and no rebalance, and nothing handed out while suspended.
func (r *ensembleRun) finish() {
	t := r.t
	await(t, 30*time.Second, "every member healthy and ready", func() bool {
		for _, in := range r.ins {
			if s := in.c.Stats(); !s.SessionHealthy || !s.Ready {
				return false
			}
		}
		return true
	})
	n := r.prod.Halt(t)
	await(t, 60*time.Second, "every message consumed", func() bool { return r.rec.Count(r.topic, n) == n })
	hwm, err := r.c.HighWaterMarks(r.topic)
	if err != nil {
		t.Fatal(err)
	}
	await(t, 30*time.Second, "commits up to the end of every partition", func() bool {
		com, err := r.c.CommittedOffsets(context.Background(), r.group, r.topic, ensembleParts)
		return err == nil && maps.Equal(com, hwm)
	})
	episodes := r.health.stop()
	r.offsets.check(t)
	r.rec.CheckExactlyOnce(t, r.topic, n)
	r.rec.checkViolations(t)
	for _, in := range r.ins {
		b, a := r.before[in.name], in.c.Stats()
		if a.SessionID != b.SessionID {
			t.Errorf("%s: session 0x%x replaced by 0x%x: it did not survive the fault", in.name, b.SessionID, a.SessionID)
		}
		if a.Rebalances != b.Rebalances || !maps.Equal(a.RebalancesByCause, b.RebalancesByCause) {
			t.Errorf("%s: rebalances %d %v before the fault, %d %v after: want none while every session survives",
				in.name, b.Rebalances, b.RebalancesByCause, a.Rebalances, a.RebalancesByCause)
		}
		if k := r.rec.lostBy(in.name); k != 0 {
			t.Errorf("%s: OnLost reported %d partitions", in.name, k)
		}
		var sus []string
		for _, e := range episodes[in.name] {
			sus = append(sus, e.took.Round(time.Millisecond).String())
			if e.received != 0 || e.delivered != 0 {
				t.Errorf("%s: %d messages received (%d handed out by the consumer) during a suspension of %v", in.name, e.received, e.delivered, e.took)
			}
		}
		if len(sus) == 0 {
			sus = []string{"none"}
		}
		t.Logf("%s: session 0x%x kept, rebalances %d (before %d), suspended: %s, fenced commits %d, received %d",
			in.name, a.SessionID, a.Rebalances, b.Rebalances, strings.Join(sus, ", "), a.FencedCommits, r.rec.By(in.name))
	}
	t.Logf("%d messages produced and consumed exactly once, committed to the end", n)
}

// healthWatch samples each member's session health every 10 ms and
// records each suspension (a run of samples with SessionHealthy false):
// how long it lasted, and how many messages the member received, and its
// consumer handed out, from the second of its samples to the last. Not
// from the first: a hand-off whose lease check passed just before the
// lease ended may complete just after (see partition's offer and Pass);
// one that completes a whole sample later was let through after the end.
type healthWatch struct {
	stopc chan struct{}
	done  chan struct{}
	eps   map[string][]episode // written by the watch's goroutine until done
}

type episode struct {
	took                time.Duration
	received, delivered int
}

func watchHealth(rec *recorder, ins []*instance) *healthWatch {
	w := &healthWatch{stopc: make(chan struct{}), done: make(chan struct{}), eps: map[string][]episode{}}
	type open struct {
		first, last         time.Time
		samples             int
		received, delivered [2]int // at the second and the last suspended sample
	}
	cur := map[string]*open{}
	end := func(name string) {
		o := cur[name]
		w.eps[name] = append(w.eps[name], episode{took: o.last.Sub(o.first),
			received: o.received[1] - o.received[0], delivered: o.delivered[1] - o.delivered[0]})
		delete(cur, name)
	}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stopc:
				for name := range cur {
					end(name)
				}
				return
			case <-tick.C:
			}
			for _, in := range ins {
				// Counts read before the health reading end an episode's
				// window, counts read after it open one: a message counted
				// in the window was received between two readings that
				// both said suspended, not just after the session came
				// back (Stats reads health before it adds up Delivered).
				got0, handed0 := rec.By(in.name), int(in.c.Stats().Delivered)
				s := in.c.Stats()
				got1, handed1, now := rec.By(in.name), int(in.c.Stats().Delivered), time.Now()
				o := cur[in.name]
				switch {
				case !s.SessionHealthy && o == nil:
					cur[in.name] = &open{first: now, last: now, samples: 1, received: [2]int{got1, got1}, delivered: [2]int{handed1, handed1}}
				case !s.SessionHealthy && o.samples == 1:
					o.last, o.samples, o.received, o.delivered = now, 2, [2]int{got1, got1}, [2]int{handed1, handed1}
				case !s.SessionHealthy:
					o.last, o.received[1], o.delivered[1] = now, max(got0, o.received[0]), max(handed0, o.delivered[0])
				case o != nil:
					end(in.name)
				}
			}
		}
	}()
	return w
}

// stop ends the watch and returns the suspensions per member.
func (w *healthWatch) stop() map[string][]episode {
	close(w.stopc)
	<-w.done
	return w.eps
}

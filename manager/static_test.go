package manager_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/faultproxy"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// moveLog counts, per member, the partitions its rebalance callbacks
// named (assigned, revoked, lost) since the last reset.
type moveLog struct {
	mu    sync.Mutex
	moves map[string]int
}

func (l *moveLog) wire(name string, cfg *manager.Config) {
	count := func(next func(context.Context, *manager.Consumer, map[string][]int32)) func(context.Context, *manager.Consumer, map[string][]int32) {
		return func(ctx context.Context, c *manager.Consumer, parts map[string][]int32) {
			l.mu.Lock()
			l.moves[name] += len(topicPartitions(parts))
			l.mu.Unlock()
			if next != nil {
				next(ctx, c, parts)
			}
		}
	}
	cfg.OnAssigned, cfg.OnRevoked, cfg.OnLost = count(cfg.OnAssigned), count(cfg.OnRevoked), count(cfg.OnLost)
}

func (l *moveLog) reset() {
	l.mu.Lock()
	l.moves = map[string]int{}
	l.mu.Unlock()
}

func (l *moveLog) of(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.moves[name]
}

// assignedOf returns what in fetches, sorted.
func assignedOf(in *instance) []manager.TopicPartition {
	out := owned(in)[in.name]
	slices.SortFunc(out, func(a, b manager.TopicPartition) int {
		return int(a.Partition) - int(b.Partition)
	})
	return out
}

// awayIs reports whether every one of ins sees exactly away as away.
func awayIs(away []string, ins ...*instance) bool {
	for _, in := range ins {
		if !slices.Equal(in.c.Stats().AwayMembers, away) {
			return false
		}
	}
	return true
}

// staticGroup starts three static members (a stable InstanceID and a
// RestartGrace) over 24 partitions under load, c through a fault proxy.
type staticGroup struct {
	c       *testcluster.Cluster
	topic   string
	group   string
	sub     *subscription.Subscription
	rec     *recorder
	moves   *moveLog
	prod    *testcluster.Producer
	a, b, d *instance // d is "c": its ZooKeeper connection goes through proxy
	proxy   *faultproxy.Proxy
}

const staticGrace = 20 * time.Second
const staticParts = 24

func newStaticGroup(t *testing.T) *staticGroup {
	c := testcluster.Shared(t)
	g := &staticGroup{c: c, rec: newRecorder(t), moves: &moveLog{moves: map[string]int{}}}
	g.topic, g.group, g.sub = newTopic(t, c, staticParts)
	g.proxy = testcluster.ZooKeeperProxy(t, c)
	g.prod = testcluster.StartProducer(t, c, g.topic, staticParts, 0, 48, 50*time.Millisecond)
	g.a = g.join(t, "a", "a", false)
	g.b = g.join(t, "b", "b", false)
	g.d = g.join(t, "c", "c", true)
	await(t, 60*time.Second, "3 balanced", func() bool { return balanced(staticParts, g.a, g.b, g.d) })
	return g
}

// join starts an instance named name in the recorder with InstanceID id
// (a crashed instance and its restart are two instances of one id).
func (g *staticGroup) join(t *testing.T, name, id string, proxied bool) *instance {
	zk := ""
	if proxied {
		zk = g.proxy.Addr() + g.c.Chroot()
	}
	return join(t, g.c, g.group, g.sub, name, g.rec, joinOpts{strict: true, shuffle: true, zk: zk, configure: func(cfg *manager.Config) {
		// A crashed member is taken over by its own restart: the holder
		// check follows the owners, not the assignments.
		ownerHooks(g.rec, name, cfg)
		cfg.InstanceID = id
		cfg.RestartGrace = staticGrace
		g.moves.wire(name, cfg)
	}})
}

// snapshot returns what each member is assigned now, and counts moves
// from here on.
func (g *staticGroup) snapshot() map[string][]manager.TopicPartition {
	before := map[string][]manager.TopicPartition{"a": assignedOf(g.a), "b": assignedOf(g.b), "c": assignedOf(g.d)}
	g.moves.reset()
	return before
}

// unmoved checks that ins fetch what they did and named no partition in
// their callbacks since the moves were reset.
func (g *staticGroup) unmoved(t *testing.T, what string, before map[string][]manager.TopicPartition, ins ...*instance) {
	t.Helper()
	for _, in := range ins {
		if n := g.moves.of(in.name); n != 0 {
			t.Errorf("%s's callbacks named %d partitions over %s; want none", in.name, n, what)
		}
		if got := assignedOf(in); !slices.Equal(got, before[in.name]) {
			t.Errorf("%s fetches %v after %s; it had %v", in.name, got, what, before[in.name])
		}
	}
}

// TestStaticRestart: of three static members under load, one that stops
// cleanly and starts again within the grace gets back exactly the
// partitions it had, and the others' callbacks name no partition
// meanwhile (nothing moves). One that stays away past the grace has its
// partitions taken over once the grace ended, not before; one that
// leaves with Leave, at once. Nothing is lost or delivered twice.
func TestStaticRestart(t *testing.T) {
	g := newStaticGroup(t)
	a, b, cc := g.a, g.b, g.d
	before := g.snapshot()

	start := time.Now()
	cc.close(t)
	await(t, 30*time.Second, "a and b see c away", func() bool { return awayIs([]string{"c"}, a, b) })
	cc = g.join(t, "c", "c", false)
	await(t, 60*time.Second, "c back with its partitions", func() bool { return balanced(staticParts, a, b, cc) })
	t.Logf("clean restart of c: all 3 fetching again %v after its Close", time.Since(start))
	if got := assignedOf(cc); !slices.Equal(got, before["c"]) {
		t.Errorf("c restarted with %v; it had %v", got, before["c"])
	}
	g.unmoved(t, "c's restart", before, a, b)

	// Past the grace: c stops and stays away.
	cc.close(t)
	stopped := time.Now()
	await(t, 30*time.Second, "a and b see c away", func() bool { return awayIs([]string{"c"}, a, b) })
	await(t, 2*staticGrace+30*time.Second, "a, b take c's partitions", func() bool { return balanced(staticParts, a, b) })
	if waited := time.Since(stopped); waited < staticGrace {
		t.Errorf("c's partitions moved %v after it stopped, within its grace %v", waited, staticGrace)
	}
	t.Logf("past the grace: a and b own every partition %v after c stopped (grace %v)", time.Since(stopped), staticGrace)
	if !awayIs(nil, a, b) {
		t.Errorf("members away after the grace: %v", a.c.Stats().AwayMembers)
	}

	// Leave: b goes for good; a takes everything without the grace.
	left := time.Now()
	if err := b.c.Leave(); err != nil {
		t.Errorf("Leave: %v", err)
	}
	b.close(t)
	await(t, 60*time.Second, "a owns every partition", func() bool { return balanced(staticParts, a) })
	if d := time.Since(left); d >= staticGrace {
		t.Errorf("after Leave, a took b's partitions after %v, not before the grace %v", d, staticGrace)
	}
	n := g.prod.Halt(t)
	await(t, 90*time.Second, "every message consumed", func() bool { return g.rec.Count(g.topic, n) == n })
	a.close(t)
	g.rec.CheckExactlyOnce(t, g.topic, n)
	g.rec.checkViolations(t)
}

// TestStaticCrashRestart: a static member whose ZooKeeper connection goes
// dead (a crash: its session is never closed and expires on the server)
// is kept in the group by its restart marker; a new instance with its id
// gets back exactly its partitions, and the others' callbacks name no
// partition meanwhile. Nothing is lost; what the crashed instance had
// received and not committed is delivered again (not a clean stop).
func TestStaticCrashRestart(t *testing.T) {
	g := newStaticGroup(t)
	a, b, cc := g.a, g.b, g.d
	before := g.snapshot()
	start := time.Now()
	g.proxy.Block()
	await(t, 60*time.Second, "a and b see c away", func() bool { return awayIs([]string{"c"}, a, b) })
	t.Logf("c cut off: seen away after %v", time.Since(start))
	crashed := cc
	cc = g.join(t, "c2", "c", false)
	await(t, 60*time.Second, "c back with its partitions", func() bool { return balanced(staticParts, a, b, cc) })
	t.Logf("crash of c: all 3 fetching again %v after the cut", time.Since(start))
	crashed.close(t) // cut off: it stops without reaching ZooKeeper
	if got := assignedOf(cc); !slices.Equal(got, before["c"]) {
		t.Errorf("c restarted after a crash with %v; it had %v", got, before["c"])
	}
	g.unmoved(t, "c's crash and restart", before, a, b)
	n := g.prod.Halt(t)
	await(t, 90*time.Second, "every message consumed", func() bool { return g.rec.Count(g.topic, n) == n })
	g.rec.checkViolations(t)
}

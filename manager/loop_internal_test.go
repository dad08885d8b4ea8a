package manager

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/subscription"
)

// TestIdleLoopSleeps: once a member owns its partitions and no claim
// waits, its manager loop no longer wakes every second (its check sleeps
// while there is nothing to look at), and Stats.LoopAt still says it is
// responsive: the time of the Stats call while the loop waits, and, while
// it works, when it took the work up.
func TestIdleLoopSleeps(t *testing.T) {
	cons, _ := joinOne(t, 2, nil)
	testcluster.Await(t, 30*time.Second, 10*time.Millisecond, "the member ready with both partitions", func() bool {
		st := cons.Stats()
		return st.Ready && len(st.Assigned) == 2 && cons.waitingClaims.Load() == 0
	})
	time.Sleep(checkEvery + checkEvery/2) // the check armed at the start finds nothing to look at
	before := cons.loopTurns.Load()
	const window = 4 * checkEvery
	time.Sleep(window)
	turns := cons.loopTurns.Load() - before
	t.Logf("%d turns of the loop over %v idle", turns, window)
	if turns > 1 { // the unowned check may fall in the window
		t.Errorf("the idle loop turned %d times in %v; want at most 1 (no check every %v)", turns, window, checkEvery)
	}

	from := time.Now()
	at := cons.Stats().LoopAt
	if at.Before(from) || at.After(time.Now()) {
		t.Errorf("LoopAt of a waiting loop is %v before the call; want the call's time", from.Sub(at))
	}
	// As if at one piece of work for a minute (tried again should the
	// loop wake meanwhile and note its own).
	took := time.Unix(0, time.Now().Add(-time.Minute).UnixNano())
	var busyAt time.Time
	for range 5 {
		cons.loopBusy.Store(took.UnixNano())
		if busyAt = cons.Stats().LoopAt; busyAt.Equal(took) {
			break
		}
	}
	cons.loopBusy.CompareAndSwap(took.UnixNano(), 0)
	if !busyAt.Equal(took) {
		t.Errorf("LoopAt of a busy loop is %v; want when it took its work up, %v", busyAt, took)
	}
}

// TestLoopWaitClosingFirst: once Close began, the loop's wait returns the
// shutdown even when other work is ready too (a select picks at random
// among what is ready, and each rebalance at 10,000 partitions delayed
// Close by up to a second).
func TestLoopWaitClosingFirst(t *testing.T) {
	cons, _ := joinOne(t, 2, nil)
	if err := cons.Close(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan zk.Event)
	close(ready) // a watch that fired
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	l := &loopState{c: cons, idsWatch: ready, assignWatch: ready, grace: idle, debounce: idle}
	for i := range 200 {
		if kind, _ := l.wait(nil, nil); kind != workDying {
			t.Fatalf("wait %d returned work of kind %d while closing; want the shutdown", i, kind)
		}
	}
}

// TestCloseDuringPlan: a Close that comes while a rebalance computes its
// plan (here held before its reads) begins the shutdown at once: Close's
// OnRevoked comes and the partitions are let go while the plan is still
// held. The plan is dropped; Close returns once its goroutine ended.
func TestCloseDuringPlan(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "t")
	group := testcluster.Name(t, "g")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.CreateTopic(ctx, topic, 4, 1); err != nil {
		t.Fatal(err)
	}
	sub, err := subscription.Static(topic)
	if err != nil {
		t.Fatal(err)
	}
	revoked := make(chan struct{}, 1)
	join := func(onRevoked func(context.Context, *Consumer, map[string][]int32)) *Consumer {
		cfg := NewConfig()
		cfg.SessionTimeout = 6 * time.Second
		cfg.OnRevoked = onRevoked
		cons, err := Join(ctx, group, sub, c.ZooKeeperConnect(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cons.Close() })
		return cons
	}
	a := join(func(context.Context, *Consumer, map[string][]int32) {
		select {
		case revoked <- struct{}{}:
		default:
		}
	})
	testcluster.Await(t, 60*time.Second, 10*time.Millisecond, "a owns every partition", func() bool {
		st := a.Stats()
		return st.Ready && len(st.Assigned) == 4
	})

	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func(cons *Consumer) {
		if cons == a {
			once.Do(func() { close(held) })
			<-release
		}
	}
	beforePlan.Store(&hold)
	defer beforePlan.Store(nil)
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })

	join(nil) // a rebalances: its plan is held
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("a computed no plan after b joined")
	}
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	select {
	case <-revoked:
	case <-time.After(30 * time.Second):
		t.Fatal("Close's OnRevoked did not come while a rebalance's plan was held")
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the plan's goroutine was held", err)
	default:
	}
	releaseOnce.Do(func() { close(release) })
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return once the plan went on")
	}
}

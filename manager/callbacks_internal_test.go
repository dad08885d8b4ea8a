package manager

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/retry"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// cbRecorder records the dispatcher's calls and flags overlapping ones.
type cbRecorder struct {
	mu       sync.Mutex
	calls    []string // kind + partitions
	maps     []map[string][]int32
	inflight atomic.Int32
	overlap  atomic.Bool
	returned chan string // each call's kind once it returns
}

func (r *cbRecorder) wire(cfg *Config) {
	r.returned = make(chan string, 16)
	f := func(kind string) func(context.Context, *Consumer, map[string][]int32) {
		return func(ctx context.Context, _ *Consumer, parts map[string][]int32) {
			if r.inflight.Add(1) > 1 {
				r.overlap.Store(true)
			}
			time.Sleep(10 * time.Millisecond) // widens any overlap
			r.mu.Lock()
			r.calls = append(r.calls, kind)
			r.maps = append(r.maps, parts)
			r.mu.Unlock()
			r.inflight.Add(-1)
			r.returned <- kind
		}
	}
	cfg.OnAssigned, cfg.OnRevoked, cfg.OnLost = f("assigned"), f("revoked"), f("lost")
}

func (r *cbRecorder) got() ([]string, []map[string][]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...), append([]map[string][]int32(nil), r.maps...)
}

// cbConsumer is a consumer with nothing but its slots and the dispatcher.
func cbConsumer(t *testing.T, r *cbRecorder) *Consumer {
	cfg := NewConfig()
	cfg.ClaimWaitCheck = time.Hour
	r.wire(cfg)
	c := &Consumer{cfg: cfg, slotTable: slotTable{slots: map[TopicPartition]*slot{}}, cb: newCallbacks(), closing: closing{loopDone: make(chan struct{})}}
	done := make(chan error)
	go func() { done <- c.dispatchCallbacks() }()
	t.Cleanup(func() {
		close(c.loopDone)
		<-done
		if r.overlap.Load() {
			t.Error("two callbacks ran at once")
		}
	})
	return c
}

func fakeClaim(session int64) *claim {
	return &claim{sessionID: session, epochDone: make(chan struct{}), lostCh: make(chan struct{})}
}

// endSession ends the session of cl: its epoch and then the claim.
func endSession(cl *claim, epoch chan struct{}) {
	close(epoch)
	cl.closeLost()
}

// addSlot adds a slot still claiming tp.
func addSlot(c *Consumer, p int32) *slot {
	sl := &slot{tp: TopicPartition{Topic: "t", Partition: p}, state: claiming, revoke: make(chan struct{})}
	c.mu.Lock()
	c.addSlotLocked(sl)
	c.mu.Unlock()
	return sl
}

// announce makes sl a running slot the embedder was told of.
func announce(c *Consumer, sl *slot, cl *claim) {
	c.mu.Lock()
	sl.state, sl.cb.phase, sl.cb.claim = running, cbAnnounced, cl
	sl.recountLocked()
	c.mu.Unlock()
}

func awaitCall(t *testing.T, r *cbRecorder, want string) {
	t.Helper()
	select {
	case k := <-r.returned:
		if k != want {
			t.Fatalf("call %s, want %s", k, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s call", want)
	}
}

// noCall asserts that no call returns within an observation window.
func noCall(t *testing.T, r *cbRecorder, why string) {
	t.Helper()
	select {
	case k := <-r.returned:
		t.Fatalf("%s call while %s", k, why)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestCallbacksAssignWaitsForClaims: OnAssigned names every partition
// claimed while claims were under way, once none is left; a slot revoked
// before it was named is never named and its wait ends with false.
func TestCallbacksAssignWaitsForClaims(t *testing.T) {
	r := &cbRecorder{}
	c := cbConsumer(t, r)
	s0, s1, s2, s3 := addSlot(c, 0), addSlot(c, 1), addSlot(c, 2), addSlot(c, 3)
	res := make(chan bool, 4)
	for _, sl := range []*slot{s0, s2, s3} {
		go func() { res <- c.awaitAssigned(sl, fakeClaim(1)) }()
	}
	noCall(t, r, "partition 1 is still being claimed")
	c.mu.Lock()
	s3.stopLocked(c.cb.newGroupLocked(cbRevoked)) // revoked before it was named
	c.mu.Unlock()
	if ok := <-res; ok {
		t.Fatal("the revoked slot's wait ended with true")
	}
	noCall(t, r, "partition 1 is still being claimed")
	go func() { res <- c.awaitAssigned(s1, fakeClaim(1)) }()
	awaitCall(t, r, "assigned")
	for range 3 {
		if ok := <-res; !ok {
			t.Fatal("a named slot's wait ended with false")
		}
	}
	calls, maps := r.got()
	if want := []string{"assigned"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	if want := map[string][]int32{"t": {0, 1, 2}}; !reflect.DeepEqual(maps[0], want) {
		t.Errorf("OnAssigned(%v), want %v", maps[0], want)
	}
}

// TestCallbacksAssignBound: a claim still under way after ClaimWaitCheck
// does not hold back the partitions already claimed.
func TestCallbacksAssignBound(t *testing.T) {
	r := &cbRecorder{}
	c := cbConsumer(t, r)
	c.cfg.ClaimWaitCheck = 200 * time.Millisecond
	s0, _ := addSlot(c, 0), addSlot(c, 1) // 1 never claims
	begin := time.Now()
	go c.awaitAssigned(s0, fakeClaim(1))
	awaitCall(t, r, "assigned")
	if took := time.Since(begin); took < c.cfg.ClaimWaitCheck {
		t.Errorf("OnAssigned after %v, before ClaimWaitCheck (%v) with a claim under way", took, c.cfg.ClaimWaitCheck)
	}
	if _, maps := r.got(); !reflect.DeepEqual(maps[0], map[string][]int32{"t": {0}}) {
		t.Errorf("OnAssigned(%v), want t: [0]", maps[0])
	}
}

// TestCallbacksRevokeGroup: the partitions of one rebalance are revoked in
// one call, once the last one stopped, and none is released (stopped
// returns) before that call returned; a partition whose claim was lost
// meanwhile is told in OnLost instead, not in OnRevoked.
func TestCallbacksRevokeGroup(t *testing.T) {
	r := &cbRecorder{}
	c := cbConsumer(t, r)
	var sls []*slot
	var cls []*claim
	for p := range int32(4) {
		sl, cl := addSlot(c, p), fakeClaim(1)
		announce(c, sl, cl)
		sls, cls = append(sls, sl), append(cls, cl)
	}
	c.mu.Lock()
	g := c.cb.newGroupLocked(cbRevoked)
	for _, sl := range sls[:3] {
		sl.stopLocked(g)
	}
	c.mu.Unlock()
	var released atomic.Int32
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { c.stopped(sls[i], cls[i], false); released.Add(1) })
	}
	noCall(t, r, "partition 2 of the rebalance still drains")
	if n := released.Load(); n != 0 {
		t.Fatalf("%d partitions released before OnRevoked", n)
	}
	cls[2].closeLost() // lost while it drained
	wg.Go(func() { c.stopped(sls[2], cls[2], false); released.Add(1) })
	awaitCall(t, r, "lost")
	awaitCall(t, r, "revoked")
	wg.Wait()
	calls, maps := r.got()
	if want := []string{"lost", "revoked"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	if want := map[string][]int32{"t": {2}}; !reflect.DeepEqual(maps[0], want) {
		t.Errorf("OnLost(%v), want %v", maps[0], want)
	}
	if want := map[string][]int32{"t": {0, 1}}; !reflect.DeepEqual(maps[1], want) {
		t.Errorf("OnRevoked(%v), want %v", maps[1], want)
	}
	// Partition 3 was not revoked: still running, untouched.
	if sls[3].cb.phase != cbAnnounced {
		t.Errorf("partition 3: phase %v, want announced", sls[3].cb.phase)
	}
}

// TestCallbacksSessionLoss: every partition claimed under a session that
// ended is told in one OnLost, once the last of them stopped, even though
// each notices on its own.
func TestCallbacksSessionLoss(t *testing.T) {
	r := &cbRecorder{}
	c := cbConsumer(t, r)
	var sls []*slot
	epoch := make(chan struct{})
	cl := fakeClaim(7) // one session's claims end together; one claim stands for them
	cl.epochDone = epoch
	other := fakeClaim(8)
	for p := range int32(3) {
		sl := addSlot(c, p)
		announce(c, sl, cl)
		sls = append(sls, sl)
	}
	s3 := addSlot(c, 3)
	announce(c, s3, other)
	endSession(cl, epoch)
	var wg sync.WaitGroup
	wg.Go(func() { c.stopped(sls[1], cl, true) })
	noCall(t, r, "two partitions of the lost session still stop")
	wg.Go(func() { c.stopped(sls[0], cl, true) })
	noCall(t, r, "a partition of the lost session still stops")
	wg.Go(func() { c.stopped(sls[2], cl, true) })
	awaitCall(t, r, "lost")
	wg.Wait()
	calls, maps := r.got()
	if want := []string{"lost"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	if want := map[string][]int32{"t": {0, 1, 2}}; !reflect.DeepEqual(maps[0], want) {
		t.Errorf("OnLost(%v), want %v", maps[0], want)
	}
}

// TestCallbacksClaimsUnderWay: the dispatcher's count of claims under way
// is that of the slots claiming and not yet claimed, whatever happens to
// them (claimed, withdrawn, started, stopped, ended).
func TestCallbacksClaimsUnderWay(t *testing.T) {
	r := &cbRecorder{}
	c := cbConsumer(t, r)
	check := func(step string) {
		t.Helper()
		c.mu.Lock()
		defer c.mu.Unlock()
		want := 0
		for _, sl := range c.slots {
			if sl.state == claiming && sl.cb.phase == cbNone {
				want++
			}
		}
		if c.cb.claimsUnderWay != want {
			t.Fatalf("%s: %d claims under way counted, %d in the slots", step, c.cb.claimsUnderWay, want)
		}
	}
	s := make([]*slot, 5)
	for i := range s {
		s[i] = addSlot(c, int32(i))
	}
	check("added")
	res := make(chan bool, 2)
	go func() { res <- c.awaitAssigned(s[0], fakeClaim(1)) }()
	go func() { res <- c.awaitAssigned(s[1], fakeClaim(1)) }()
	testcluster.Await(t, 10*time.Second, time.Millisecond, "two claims claimed", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.cb.claimsUnderWay == 3
	})
	check("two claimed")
	c.mu.Lock()
	s[1].stopLocked(c.cb.newGroupLocked(cbRevoked)) // withdrawn before it was named
	s[2].stopLocked(c.cb.newGroupLocked(cbRevoked)) // revoked while claiming
	c.mu.Unlock()
	if ok := <-res; ok {
		t.Fatal("the revoked slot's wait ended with true")
	}
	check("two stopped")
	c.onSlotEvent(slotEvent{sl: s[3], started: true})
	check("one started")
	c.restartBackoff = map[TopicPartition]*retry.Backoff{}
	c.onSlotEvent(slotEvent{sl: s[2], done: true})
	c.onSlotEvent(slotEvent{sl: s[4], done: true}) // a claim that died: not assigned any more, not restarted
	check("two ended")
	awaitCall(t, r, "assigned") // nothing under way any more: s0 is named
	if ok := <-res; !ok {
		t.Fatal("the named slot's wait ended with false")
	}
	check("named")
}

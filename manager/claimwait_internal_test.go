package manager

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClaimWaitTooLong: a claim that waits on a holder the assignment did
// not see makes the member read the owners again at once, once per
// holder; a wait on the holder it saw (the previous owner draining) only
// after ClaimWaitCheck, at most once per ClaimWaitCheck.
func TestClaimWaitTooLong(t *testing.T) {
	const check = time.Hour
	type waitState struct {
		seen    string
		seenSet bool
		holder  string        // "" not waiting
		waited  time.Duration // how long the wait has lasted
	}
	cases := []struct {
		name string
		wait waitState
		want []bool // successive calls
	}{
		{"no wait", waitState{seen: "a", seenSet: true}, []bool{false}},
		{"waits on the owner the plan saw", waitState{seen: "a", seenSet: true, holder: "a", waited: time.Minute}, []bool{false, false}},
		{"waits on another owner than the plan saw", waitState{seen: "a", seenSet: true, holder: "b"}, []bool{true, false}},
		{"waits on an owner where the plan saw none", waitState{seen: "", seenSet: true, holder: "b"}, []bool{true, false}},
		{"no plan saw the partition (a restart after a loss)", waitState{holder: "b"}, []bool{false}},
		{"waits on the owner the plan saw, past ClaimWaitCheck", waitState{seen: "a", seenSet: true, holder: "a", waited: check + time.Second}, []bool{true, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewConfig()
			cfg.ClaimWaitCheck = check
			c := &Consumer{cfg: cfg, log: slog.New(slog.DiscardHandler), slotTable: slotTable{slots: map[TopicPartition]*slot{}}}
			tp := TopicPartition{Topic: "t", Partition: 0}
			sl := &slot{tp: tp, state: claiming, seen: tc.wait.seen, seenSet: tc.wait.seenSet}
			if tc.wait.holder != "" {
				h := tc.wait.holder
				sl.holder.Store(&h)
				sl.waitingSince.Store(time.Now().Add(-tc.wait.waited).UnixNano())
				c.waitingClaims.Add(1)
			}
			c.slots[tp] = sl
			for i, want := range tc.want {
				if got := c.claimWaitTooLong(); got != want {
					t.Errorf("call %d: claimWaitTooLong() = %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

// TestClaimWaiterWakesLoop: a claim that finds a holder records it and
// wakes the loop without blocking (one signal pending at most), so that an
// unseen holder is acted on at once rather than at the loop's next
// second; a claim that stops waiting clears the holder and wakes nobody.
func TestClaimWaiterWakesLoop(t *testing.T) {
	c := &Consumer{slotTable: slotTable{claimWaiting: make(chan struct{}, 1)}}
	sl := &slot{tp: TopicPartition{Topic: "t", Partition: 0}}
	waiting := c.claimWaiter(sl)
	waiting("b")
	waiting("c") // must not block: a signal is pending already
	if h := sl.holder.Load(); h == nil || *h != "c" || sl.waitingSince.Load() == 0 {
		t.Fatalf("holder %v, waiting since %d; want c, set", h, sl.waitingSince.Load())
	}
	if n := c.waitingClaims.Load(); n != 1 {
		t.Fatalf("%d claims counted waiting, want 1", n)
	}
	select {
	case <-c.claimWaiting:
	default:
		t.Fatal("the loop was not woken")
	}
	waiting("")
	if sl.holder.Load() != nil || sl.waitingSince.Load() != 0 || c.waitingClaims.Load() != 0 {
		t.Fatalf("the wait was not cleared (%d claims counted waiting)", c.waitingClaims.Load())
	}
	select {
	case <-c.claimWaiting:
		t.Fatal("woken for a claim that no longer waits")
	default:
	}
}

// TestClaimWaitTooLongAllUnseen: every claim waiting on a holder its plan
// did not see is rechecked in one call (one log line, one rebalance),
// not one per call.
func TestClaimWaitTooLongAllUnseen(t *testing.T) {
	cfg := NewConfig()
	cfg.ClaimWaitCheck = time.Hour
	c := &Consumer{cfg: cfg, log: slog.New(slog.DiscardHandler), slotTable: slotTable{slots: map[TopicPartition]*slot{}}}
	for p := range int32(3) {
		tp := TopicPartition{Topic: "t", Partition: p}
		sl := &slot{tp: tp, state: claiming, seen: "a", seenSet: true}
		h := "b"
		sl.holder.Store(&h)
		sl.waitingSince.Store(time.Now().UnixNano())
		c.waitingClaims.Add(1)
		c.slots[tp] = sl
	}
	if !c.claimWaitTooLong() {
		t.Fatal("first call: false, want true")
	}
	for tp, sl := range c.slots {
		if sl.seen != "b" {
			t.Errorf("%v: seen %q after the call, want b (rechecked)", tp, sl.seen)
		}
	}
	if c.claimWaitTooLong() {
		t.Error("second call: true, want false (every unseen holder was handled)")
	}

	// Claims finding their holders one by one (each waking the loop) are
	// all rechecked, and logged at Info once a second with the count.
	var buf bytes.Buffer
	c.log = slog.New(slog.NewTextHandler(&buf, nil))
	c.unseenLogged = time.Time{}
	for i, sl := range slices.Collect(maps.Values(c.slots)) {
		h := fmt.Sprint("c", i)
		sl.holder.Store(&h)
		if !c.claimWaitTooLong() {
			t.Errorf("claim %d: false, want true", i)
		}
	}
	if n := strings.Count(buf.String(), "level=INFO"); n != 1 {
		t.Errorf("%d INFO lines for 3 claims within a second, want 1:\n%s", n, buf.String())
	}
}

// TestUnseenHoldersQueued: the loop woken by claims (onClaimWaiting)
// looks at the slots whose claims found a holder since it last looked,
// not at every slot: a slot waiting on an unseen holder it was not told
// of is left to the check (claimWaitTooLong, once a second), and a slot
// that is no longer the consumer's is skipped.
func TestUnseenHoldersQueued(t *testing.T) {
	cfg := NewConfig()
	cfg.ClaimWaitCheck = time.Hour
	c := &Consumer{cfg: cfg, log: slog.New(slog.DiscardHandler),
		slotTable: slotTable{slots: map[TopicPartition]*slot{}, claimWaiting: make(chan struct{}, 1)}}
	mk := func(p int32) *slot {
		tp := TopicPartition{Topic: "t", Partition: p}
		sl := &slot{tp: tp, state: claiming, seen: "a", seenSet: true}
		c.slots[tp] = sl
		return sl
	}
	told, untold, gone := mk(0), mk(1), mk(2)
	c.claimWaiter(told)("b")
	c.claimWaiter(gone)("b")
	delete(c.slots, gone.tp) // ended since
	h := "b"
	untold.holder.Store(&h) // waits on b, the loop not told
	untold.waitingSince.Store(time.Now().UnixNano())
	c.waitingClaims.Add(1)

	if !c.unseenHolders() {
		t.Fatal("unseenHolders: false, want true (slot 0 found b)")
	}
	if told.seen != "b" || untold.seen != "a" || gone.seen != "a" {
		t.Fatalf("seen after unseenHolders: %q %q %q; want b a a", told.seen, untold.seen, gone.seen)
	}
	if c.unseenHolders() {
		t.Fatal("unseenHolders again: true, want false (nothing queued since)")
	}
	if !c.claimWaitTooLong() || untold.seen != "b" {
		t.Fatalf("the check did not recheck slot 1 (seen %q)", untold.seen)
	}
}

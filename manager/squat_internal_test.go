package manager

import (
	"errors"
	"log/slog"
	"testing"
	"time"
)

// TestSquatNeedsNonMemberForClaimWaitCheck: a claim that has waited
// ClaimWaitCheck on a holder is reported squatted only once that holder
// has not been a member for ClaimWaitCheck too. A member that just left
// (the member list already without it, the claim not yet told its node
// went) is not a squatter; one that stays out is, once.
func TestSquatNeedsNonMemberForClaimWaitCheck(t *testing.T) {
	cfg := NewConfig()
	cfg.ClaimWaitCheck = 2 * time.Second
	c := squatConsumer(cfg)
	t0 := time.Now()
	sl := &slot{tp: TopicPartition{Topic: "t", Partition: 0}}
	holder := "left"
	sl.holder.Store(&holder)
	sl.waitingSince.Store(t0.Add(-time.Minute).UnixNano()) // waiting long already
	c.waitingClaims.Add(1)
	c.slots[sl.tp] = sl
	c.members = []string{"left", "me"}

	check := squatChecker(t, c, t0)
	check(0, 0)                // a member: never a squat
	c.members = []string{"me"} // it left; its nodes go with its session
	check(time.Second, 0)
	check(2900*time.Millisecond, 0) // out for 1.9 s: not yet
	check(3*time.Second, 1)         // out for ClaimWaitCheck
	check(4*time.Second, 1)
	select {
	case err := <-c.errors:
		var ne *NodeError
		if !errors.As(err, &ne) || !errors.Is(err, ErrSquatted) || ne.Path != "/consumers/g/owners/t/0" {
			t.Errorf("reported %v, want a NodeError with ErrSquatted for /consumers/g/owners/t/0", err)
		}
	default:
		t.Fatal("nothing reported")
	}
	if len(c.errors) != 0 {
		t.Errorf("reported %d times more, want once", len(c.errors))
	}

	// The holder goes and comes back out of the group: its clock starts
	// again.
	sl.holder.Store(nil)
	check(5*time.Second, 0)
	sl.holder.Store(&holder)
	check(6*time.Second, 0)
	check(8*time.Second, 1)

	// The claim stops waiting: nothing is squatted, and the holder is
	// forgotten.
	c.claimWaiter(sl)("")
	check(9*time.Second, 0)
	if len(c.nonMembers) != 0 || len(c.badNodes) != 0 {
		t.Errorf("after the wait: non-members %v, nodes reported %v; want none", c.nonMembers, c.badNodes)
	}
}

// TestSquatGraceForDepartedMember: a member that left the group while its
// partitions drain (it deletes its registration first, see
// deregisterEarly) keeps its owner nodes for up to CloseTimeout plus
// SessionTimeout before a claim waiting on one reports it squatted, and
// its wait does not make the member recompute.
func TestSquatGraceForDepartedMember(t *testing.T) {
	cfg := NewConfig()
	cfg.ClaimWaitCheck, cfg.CloseTimeout, cfg.SessionTimeout = 2*time.Second, 10*time.Second, 6*time.Second
	c := squatConsumer(cfg)
	t0 := time.Now()
	sl := &slot{tp: TopicPartition{Topic: "t", Partition: 0}}
	holder := "leaver"
	sl.holder.Store(&holder)
	sl.seen, sl.seenSet = holder, true
	sl.waitingSince.Store(t0.UnixNano())
	c.waitingClaims.Add(1)
	c.slots[sl.tp] = sl

	c.mu.Lock()
	c.noteDepartedLocked([]string{"leaver", "me"}, t0)
	c.members = []string{"leaver", "me"}
	c.noteDepartedLocked([]string{"me"}, t0) // it deregistered; it drains
	c.members = []string{"me"}
	c.mu.Unlock()

	check := squatChecker(t, c, t0)
	check(0, 0)
	check(3*time.Second, 0) // past ClaimWaitCheck: still draining
	c.lastClaimWaitCheck = t0.Add(-time.Minute)
	if c.claimWaitTooLong() {
		t.Error("a claim waiting on a member that left makes the member recompute; want it not to")
	}
	check(15*time.Second, 0) // within CloseTimeout + SessionTimeout
	check(16*time.Second, 1) // past it: squatted
	if len(c.errors) != 1 {
		t.Errorf("reported %d errors, want 1", len(c.errors))
	}

	// Gone for longer than the grace, it is forgotten; back in the group,
	// too.
	c.mu.Lock()
	c.noteDepartedLocked([]string{"me"}, t0.Add(17*time.Second))
	gone := len(c.departed)
	c.noteDepartedLocked([]string{"me", "other"}, t0.Add(18*time.Second))
	c.members = []string{"me", "other"}
	c.noteDepartedLocked([]string{"me"}, t0.Add(19*time.Second))
	c.noteDepartedLocked([]string{"me", "other"}, t0.Add(20*time.Second))
	back := len(c.departed)
	c.mu.Unlock()
	if gone != 0 || back != 0 {
		t.Errorf("departed after the grace: %d, after coming back: %d; want 0 and 0", gone, back)
	}
}

// squatConsumer is a consumer with just what the squat checks use.
func squatConsumer(cfg *Config) *Consumer {
	return &Consumer{cfg: cfg, log: slog.New(slog.DiscardHandler), group: "g",
		outputs: newOutputs(cfg), groupView: newGroupView(), slotTable: newSlotTable()}
}

// squatChecker returns a check that runs c's squat check at t0 + at and
// wants want partitions squatted.
func squatChecker(t *testing.T, c *Consumer, t0 time.Time) func(at time.Duration, want int) {
	return func(at time.Duration, want int) {
		t.Helper()
		c.mu.Lock()
		c.noteSquatsLocked(t0.Add(at))
		got := c.squatted
		c.mu.Unlock()
		if got != want {
			t.Errorf("at %v: %d squatted, want %d", at, got, want)
		}
	}
}

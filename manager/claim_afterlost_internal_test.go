package manager

import (
	"testing"
	"time"
)

// TestClaimAfterLost: functions registered with AfterLost run, each on a
// goroutine of its own, once the claim is lost, or at once when it is
// lost already; stop keeps one from running (true) only before the loss.
func TestClaimAfterLost(t *testing.T) {
	cl := fakeClaim(1)
	ran := make(chan string, 3)
	stop1 := cl.AfterLost(func() { ran <- "1" })
	stop2 := cl.AfterLost(func() { ran <- "2" })
	if !stop2() {
		t.Fatal("stop before the loss: false, want true")
	}
	if stop2() {
		t.Fatal("second stop: true, want false")
	}
	select {
	case f := <-ran:
		t.Fatalf("%s ran before the loss", f)
	default:
	}
	cl.closeLost()
	if f := recvWithin(t, ran, "AfterLost function ran"); f != "1" {
		t.Fatalf("%s ran, want 1", f)
	}
	if stop1() {
		t.Error("stop after the loss: true, want false")
	}
	stop3 := cl.AfterLost(func() { ran <- "3" })
	if f := recvWithin(t, ran, "AfterLost function ran"); f != "3" {
		t.Fatalf("%s ran, want 3 (registered after the loss)", f)
	}
	if stop3() {
		t.Error("stop of a function run at once: true, want false")
	}
	select {
	case f := <-ran:
		t.Fatalf("%s ran too", f)
	case <-time.After(50 * time.Millisecond):
	}
	if !cl.lost() {
		t.Error("lost() false after the loss")
	}
}

// recvWithin receives from ch, failing t when nothing comes in 10 s
// (what names it).
func recvWithin[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no " + what)
		var zero T
		return zero
	}
}

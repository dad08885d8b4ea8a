package retry

import (
	"testing"
	"time"
)

func TestNextIsJitteredAndBounded(t *testing.T) {
	b := New(100*time.Millisecond, 400*time.Millisecond)
	seen := map[time.Duration]bool{}
	for i := 0; i < 50; i++ {
		d := b.Next()
		if d < 50*time.Millisecond || d > 600*time.Millisecond {
			t.Fatalf("wait %d: %v outside [50ms, 600ms]", i, d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Errorf("only %d distinct waits in 50: not jittered", len(seen))
	}
	b.Reset()
	if d := b.Next(); d > 150*time.Millisecond {
		t.Errorf("after Reset the first wait is %v, want about 100ms", d)
	}
}

func TestTwoBackoffsDoNotMoveInLockstep(t *testing.T) {
	a, b := New(time.Second, time.Minute), New(time.Second, time.Minute)
	same := 0
	for i := 0; i < 20; i++ {
		if a.Next() == b.Next() {
			same++
		}
	}
	if same > 2 {
		t.Errorf("%d of 20 waits identical between two backoffs", same)
	}
}

func TestWaitCancels(t *testing.T) {
	b := New(time.Hour, time.Hour)
	c := make(chan struct{})
	close(c)
	if b.Wait(nil, c) {
		t.Error("Wait returned true with a closed cancel channel")
	}
	if b.Wait(c, nil) {
		t.Error("Wait returned true with a closed cancel channel")
	}
	if !New(time.Millisecond, time.Millisecond).Wait(nil, nil) {
		t.Error("Wait returned false with nothing closed")
	}
}

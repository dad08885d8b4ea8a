package benchkit

import (
	"context"
	"testing"
	"time"
)

// TestPace: Pace ends when send says so, having called it no more; while
// paused it sends nothing, and it ends with ctx.
func TestPace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	calls := 0
	Pace(ctx, 1000, nil, func() bool { calls++; return calls < 3 })
	if calls != 3 {
		t.Errorf("send called %d times after it said stop at the 3rd", calls)
	}

	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	calls = 0
	Pace(short, 1000, func() bool { return true }, func() bool { calls++; return true })
	if calls != 0 {
		t.Errorf("paused: send called %d times", calls)
	}
}

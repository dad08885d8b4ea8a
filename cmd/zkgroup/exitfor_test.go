package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/offsets"
	"github.com/zkgroup/zkgroup/subscription"
)

// TestExitForConfigErrors: every invalid config or argument, whichever
// package found it (they all wrap the one zkgroup.ErrConfig), exits 2
// (usage, as doc.go says); a refusal exits 3; anything else 1.
func TestExitForConfigErrors(t *testing.T) {
	_, subErr := subscription.Static("bad topic!")
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("%w: --to-datetime %q", ops.ErrConfig, "x"), exitUsage},
		{fmt.Errorf("offsets: commit %q/0: %w: offset -1 is negative", "t", offsets.ErrConfig), exitUsage},
		{fmt.Errorf("%w: SessionTimeout: 1s is under 6s", manager.ErrConfig), exitUsage},
		{fmt.Errorf("%w: Servers: empty", zkconn.ErrConfig), exitUsage},
		{subErr, exitUsage},
		{fmt.Errorf("ops: %w", errRefused), exitRefused},
		{fmt.Errorf("%w: registering: boom", manager.ErrJoin), exitFailure},
		{errors.New("offsets: commit failed"), exitFailure},
	} {
		if got := exitFor(tc.err); got != tc.want {
			t.Errorf("exitFor(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

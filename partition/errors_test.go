package partition_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zkgroup/zkgroup/offsets"
	"github.com/zkgroup/zkgroup/partition"
)

// TestError: an *Error says its partition and operation, unwraps to its
// cause, and errors.Is and As see through it and through wrapping; the
// sentinels are distinct, and ErrCommit is offsets.ErrCommit itself.
func TestError(t *testing.T) {
	if partition.ErrCommit != offsets.ErrCommit {
		t.Error("ErrCommit is not offsets.ErrCommit")
	}
	sentinels := []error{partition.ErrFetch, partition.ErrCommit, partition.ErrLost, partition.ErrSuspended,
		partition.ErrReset, partition.ErrStopped, partition.ErrDrainLate}
	for i, a := range sentinels {
		for j, b := range sentinels {
			if i != j && errors.Is(a, b) {
				t.Errorf("%v is %v", a, b)
			}
		}
	}
	cause := fmt.Errorf("%w: offset 7: broker said no", partition.ErrCommit)
	var err error = &partition.Error{Topic: "t", Partition: 3, Op: partition.OpCommit, Err: cause}
	if got, want := err.Error(), "partition t/3: commit: "+cause.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("closing: %w", err)
	var pe *partition.Error
	if !errors.As(wrapped, &pe) || pe.Op != partition.OpCommit || pe.Partition != 3 {
		t.Errorf("errors.As: %#v", pe)
	}
	if !errors.Is(wrapped, offsets.ErrCommit) || errors.Is(wrapped, partition.ErrLost) {
		t.Error("errors.Is does not see the cause alone")
	}
	if errors.Unwrap(err) != cause {
		t.Error("Unwrap is not the cause")
	}
}

// TestAckResultString names every result, and says a value out of range.
func TestAckResultString(t *testing.T) {
	for r, want := range map[partition.AckResult]string{partition.AckOK: "ok", partition.AckDuplicate: "duplicate",
		partition.AckStale: "stale", partition.AckUnknown: "unknown", partition.AckInvalid: "invalid", 0: "AckResult(0)"} {
		if got := r.String(); got != want {
			t.Errorf("%d: %q, want %q", int(r), got, want)
		}
	}
}

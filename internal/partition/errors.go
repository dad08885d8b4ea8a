package partition

import (
	"errors"
	"fmt"

	public "github.com/zkgroup/zkgroup/partition"
)

// The sentinel errors wrapped in *Error: package partition's (public), the
// same values.
var (
	ErrFetch     = public.ErrFetch
	ErrCommit    = public.ErrCommit // offsets.ErrCommit
	ErrLost      = public.ErrLost
	ErrSuspended = public.ErrSuspended
	ErrReset     = public.ErrReset
	ErrStopped   = public.ErrStopped
	ErrDrainLate = public.ErrDrainLate
	ErrTruncated = public.ErrTruncated
)

// commitError wraps err, the failure to commit offset next, in ErrCommit
// unless it wraps it already (the stores' errors do).
func commitError(next int64, err error) error {
	if errors.Is(err, ErrCommit) {
		return fmt.Errorf("offset %d: %w", next, err)
	}
	return fmt.Errorf("%w: offset %d: %w", ErrCommit, next, err)
}

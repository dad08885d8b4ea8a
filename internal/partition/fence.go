package partition

import (
	"context"
	"time"
)

// Fence tells a Manager whether it may act as the partition's owner. It is
// implemented by the consumer manager from the partition's claim (its
// ZooKeeper owner node) and the ZooKeeper session's health. Implementations
// must be safe for concurrent use.
type Fence interface {
	// Ready returns a channel that is already closed while the owner may
	// hand out messages and commit, and otherwise a channel that is closed
	// when that becomes true again (the session is suspended meanwhile).
	Ready() <-chan struct{}
	// Suspended returns a channel that is already closed while the owner
	// may not act (the session is suspended), and otherwise one that is
	// closed when that begins. A message waiting to be handed out is held
	// back when it closes.
	Suspended() <-chan struct{}
	// Lost is closed once ownership is gone for good (the owner node was
	// deleted or the session expired).
	Lost() <-chan struct{}
	// Lease reports whether the owner may act at this instant, and until
	// when: ok is false once Lost is closed, and whenever the session's
	// lease does not hold on a monotonic clock (no request that ZooKeeper
	// answered was sent within 2/3 of the session timeout), even if
	// nobody noticed yet, as after the process was paused. until is the
	// end of the lease (a monotonic instant): a side effect that takes
	// effect before until took effect while the ownership held. A Lease
	// that says false while Ready is still closed shuts Ready (and
	// closes Suspended) until the session has answered again, so a
	// caller that then waits on Ready does not spin. It must not block
	// and is called before every hand-out: it must be cheap.
	Lease() (until time.Time, ok bool)
	// Token is the claim's fencing token, written with each commit where
	// the store keeps it (offsets.FormatToken): zkgroup's is the owner
	// node's czxid, which grows with every new claim of the partition.
	// 0: none. Constant for the life of the fence.
	Token() int64
	// AfterLost arranges for f to run once, on a goroutine of its own,
	// when Lost is closed (at once if it is already closed), as
	// context.AfterFunc does: a Manager needs no goroutine to watch Lost.
	// stop unregisters f; it reports whether it did so before f was
	// started. Both are safe for concurrent use and do not block.
	AfterLost(f func()) (stop func() bool)
}

// fenceError says why f does not allow a commit now: ErrLost once the
// claim is gone, ErrSuspended while the session is only suspended (the
// claim may well come back with it).
func fenceError(f Fence) error {
	select {
	case <-f.Lost():
		return ErrLost
	default:
		return ErrSuspended
	}
}

// leaseContext bounds a commit by timeout and by the end of the lease it
// was taken under (until, a monotonic instant; zero: no lease), whichever
// comes first: the stores take a write's deadline as the instant after
// which it must not take effect.
func leaseContext(parent context.Context, timeout time.Duration, until time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	if d, _ := ctx.Deadline(); !until.IsZero() && until.Before(d) {
		ctx2, cancel2 := context.WithDeadline(ctx, until)
		return ctx2, func() { cancel2(); cancel() }
	}
	return ctx, cancel
}

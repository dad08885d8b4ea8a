package partition

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
	// AfterLost arranges for f to run once, on a goroutine of its own,
	// when Lost is closed (at once if it is already closed), as
	// context.AfterFunc does: a Manager needs no goroutine to watch Lost.
	// stop unregisters f; it reports whether it did so before f was
	// started. Both are safe for concurrent use and do not block.
	AfterLost(f func()) (stop func() bool)
}

// allowed reports, without blocking, whether f permits acting as owner.
func allowed(f Fence) bool {
	select {
	case <-f.Lost():
		return false
	default:
	}
	select {
	case <-f.Ready():
		return true
	default:
		return false
	}
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

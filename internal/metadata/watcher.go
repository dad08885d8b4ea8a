package metadata

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"gopkg.in/tomb.v2"

	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// Watcher keeps a current view of the cluster's topics and of the
// partitions, replica assignments and preferred leaders of the topics
// selected by a filter, read and watched through a go-zookeeper session:
// the member's own coordination session (OpenSession). It never reads partition state nodes, so a live leader change
// costs it nothing and never changes its view. All its methods are safe
// for concurrent use.
type Watcher struct {
	cfg     Config
	log     *slog.Logger
	st      store
	r       *refresher // owned by the loop goroutine after Open
	t       tomb.Tomb
	wake    chan struct{} // buffered 1: a watch fired or the filter changed
	changes chan struct{} // buffered 1
	resyncs atomic.Uint64 // safety resyncs that succeeded (tests wait on it)

	mu      sync.Mutex
	view    map[string][]Partition // published (Snapshot); never modified
	version uint64
	filter  func(string) bool
	err     error
	fired   []watchKey
	closed  bool

	closeOnce sync.Once
	closeErr  error
}

// OpenSession reads an initial snapshot through s, a session the caller
// holds and closes (the member's coordination session, whatever its
// transport, TLS included, and credentials), and starts watching: the
// Watcher reads and watches the topics through it, so that the member needs
// no second ZooKeeper connection. filter selects the topics whose
// partitions are read; nil selects all. logger may be nil. Paths are
// relative to s's chroot. It blocks until it has the snapshot or fails: on
// a bad cfg, or when s's chroot holds no Kafka cluster (ErrNoCluster).
// Close the Watcher before s (it leaves s open); the watches it set stay
// with s until they fire or the session ends, a few bytes each.
func OpenSession(s *zkconn.Session, filter func(topic string) bool, cfg Config, logger *slog.Logger) (*Watcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := newWatcher(cfg, filter, logger)
	if err := w.start(newZKStore(s, w.onFire)); err != nil {
		return nil, fmt.Errorf("metadata: initial snapshot: %w", err)
	}
	return w, nil
}

func newWatcher(cfg Config, filter func(string) bool, log *slog.Logger) *Watcher {
	if filter == nil {
		filter = selectAll
	}
	return &Watcher{
		cfg:     cfg,
		log:     log,
		wake:    make(chan struct{}, 1),
		changes: make(chan struct{}, 1),
		filter:  filter,
	}
}

func selectAll(string) bool { return true }

// start reads the initial view from st and starts the loop; on failure it
// closes st.
func (w *Watcher) start(st store) error {
	w.st = st
	w.r = newRefresher(st, w.log)
	w.r.onMalformed = w.cfg.OnMalformed
	view, err := w.r.refresh(w.currentFilter(), nil, func() bool { return false })
	if err != nil {
		if cerr := st.close(); cerr != nil {
			w.log.Error("metadata: closing after a failed open", "error", cerr)
		}
		return err
	}
	w.view, w.version = view, 1
	w.log.Info("metadata: watching", "topics", len(view), "version", w.version)
	w.t.Go(w.loop)
	return nil
}

// Snapshot returns the latest view. The view is shared with the Watcher
// and every other caller, and never changed once published (a change
// publishes a new one that keeps the unchanged topics' partitions), so
// it costs nothing per partition; the caller must not modify it. It does
// not block on ZooKeeper; after Close it returns the last view.
func (w *Watcher) Snapshot() Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Snapshot{Topics: w.view, Version: w.version}
}

// Counts returns the partition count of every topic of view that has
// partitions.
func Counts(view map[string][]Partition) map[string]int {
	out := make(map[string]int, len(view))
	for t, ps := range view {
		if len(ps) > 0 {
			out[t] = len(ps)
		}
	}
	return out
}

// Changes returns a channel, buffered 1, that receives after the view
// changed: a topic created or deleted (any topic, selected or not), or a
// selected topic's partition count or replica assignment (hence its
// preferred leaders) changed, or the filter selected other topics. A live
// leader change (a broker stopping, crashing or coming back) does not
// change the view and never fires it. Bursts are coalesced, so read
// Snapshot after each receive. It is never closed.
func (w *Watcher) Changes() <-chan struct{} { return w.changes }

// SetFilter replaces the filter (nil selects all) and triggers a refresh;
// Changes receives once the new selection is read. It does not block.
func (w *Watcher) SetFilter(filter func(string) bool) {
	if filter == nil {
		filter = selectAll
	}
	w.mu.Lock()
	w.filter = filter
	w.mu.Unlock()
	w.signalWake()
}

// Err returns the error of the latest refresh (a *ReadError, or ErrNoCluster,
// possibly joined), nil once a refresh succeeds again; meanwhile Snapshot
// serves the last good view. After Close it returns ErrClosed. It does not
// block.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	return w.err
}

// Close stops watching and closes the ZooKeeper session Open dialled (not
// the one given to OpenSession). It blocks until the watcher's goroutines
// have stopped and, with Open, the session's. It is idempotent: later
// calls return the first call's result.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		w.t.Kill(nil)
		_ = w.t.Wait() // the loop only returns nil
		w.closeErr = w.st.close()
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.log.Info("metadata: closed")
	})
	return w.closeErr
}

func (w *Watcher) currentFilter() func(string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.filter
}

// onFire is called by the store's forwarders when a watch fires.
func (w *Watcher) onFire(k watchKey) {
	w.mu.Lock()
	w.fired = append(w.fired, k)
	w.mu.Unlock()
	w.signalWake()
}

func (w *Watcher) signalWake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Watcher) takeFired() []watchKey {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.fired
	w.fired = nil
	return f
}

package metadata

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"gopkg.in/tomb.v2"
)

// Watcher keeps a current view of the cluster's topics and of the
// partitions, replica assignments and preferred leaders of the topics
// selected by a filter, read through kazoo-go on its own read-only
// ZooKeeper session. It never reads partition state nodes, so a live
// leader change costs it nothing and never changes its view. All its
// methods are safe for concurrent use.
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
	view    map[string][]Partition // published; never modified
	version uint64
	filter  func(string) bool
	err     error
	fired   []watchKey
	closed  bool

	closeOnce sync.Once
	closeErr  error
}

// Open connects to ZooKeeper with kazoo-go (zkConnect is
// "h1:2181,h2:2181/chroot"), reads an initial snapshot and starts watching.
// filter selects the topics whose partitions are read; nil selects all. logger may be nil. Open blocks until it has the snapshot or
// fails: on a bad argument, when ZooKeeper cannot be reached (the client
// gives up after one round over the servers) or when no Kafka cluster is
// registered under the chroot (ErrNoCluster). Close the Watcher when done.
func Open(zkConnect string, filter func(topic string) bool, cfg Config, logger *slog.Logger) (*Watcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	servers, chroot, err := parseConnect(zkConnect)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("zookeeper", zkConnect)
	w := newWatcher(cfg, filter, logger)
	st, err := newKazooStore(servers, chroot, cfg, w.onFire, logger)
	if err != nil {
		return nil, err
	}
	if err := w.start(st); err != nil {
		return nil, fmt.Errorf("metadata: initial snapshot from %s: %w", zkConnect, err)
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

// Snapshot returns a deep copy of the latest view. It does not block on
// ZooKeeper; after Close it returns the last view.
func (w *Watcher) Snapshot() Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Snapshot{Topics: cloneView(w.view), Version: w.version}
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

// Close stops watching and closes the ZooKeeper session. It blocks until
// the watcher's goroutines have stopped and the client has released its
// watches (normally well under a second, at most about twice the session
// timeout; then it returns an error wrapping ErrStuck). It is idempotent:
// later calls return the first call's result.
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

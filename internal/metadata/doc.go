// Package metadata watches the Kafka cluster metadata that a
// ZooKeeper-coordinated consumer group needs: the topic list, and the
// partitions, replicas and leaders of the topics a filter selects.
//
// A Watcher reads them through kazoo-go on its own read-only ZooKeeper
// session (kazoo-go's samuel client; none of its types leave this package):
//
//   - a child watch on /brokers/topics sees topics created and deleted;
//   - a data watch on each selected /brokers/topics/<topic> sees partition
//     counts change;
//   - leaders are read from every selected partition's state node on each
//     refresh and every Config.LeaderRefresh, since kazoo-go cannot watch
//     state nodes. Each periodic refresh reads the whole view, which also
//     covers a watch the client might lose.
//
// Watches fire once; each is armed again by the refresh that follows, and
// at most one is pending per node. Events are coalesced (Config.Debounce).
// When the session is lost the client reconnects by itself; when it expired
// every watch fires and everything is read and armed again. Failed reads
// are logged and retried with backoff while Snapshot keeps serving the last
// good view. Malformed topic or state nodes are logged once and skipped;
// a missing state node gives leader -1; a topic deleted mid-read drops out.
//
// Goroutines: one loop per Watcher (a tomb), one short-lived forwarder per
// pending watch, the client's own, and up to eight readers during a
// refresh. Close stops them all and returns once the client has released
// every watch.
package metadata

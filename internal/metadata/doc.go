// Package metadata watches the Kafka cluster metadata that a
// ZooKeeper-coordinated consumer group needs: the topic list, and the
// partitions, replica assignments and preferred leaders of the topics a
// filter selects.
//
// A Watcher reads them through a go-zookeeper session (internal/zkconn):
// a consumer group member's own coordination session (OpenSession), so that
// a member holds one ZooKeeper connection, over TLS when its session is.
// It reads two kinds
// of znode, and watches both:
//
//   - a child watch on /brokers/topics sees topics created and deleted;
//   - a data watch on each selected /brokers/topics/<topic> sees its
//     partition count and replica assignment change.
//
// It never reads a partition state node (/brokers/topics/<t>/partitions/
// <p>/state). Each partition's Leader is its preferred leader, the first
// replica of its assignment in the topic node: it survives broker restarts
// and crashes (Kafka hands leadership back to it), so the view that drives
// rebalancing changes only when the topics, a selected topic's partition
// count or its replica assignment change, and Changes fires only then.
// The consumers follow the live leader by themselves.
//
// Reads are proportional to what changed: a fired topic watch re-reads that
// topic node only; the list's watch re-reads the list, plus the nodes of
// newly listed selected topics; a new filter reads the newly selected
// topics. Besides, a safety resync (Config.Resync, 60s by default, each
// interval jittered by ±50%) reads the list and every selected topic node
// again, in case a watch was lost; at steady state that is all the watcher
// reads: 1 + (selected topics) nodes per Resync, in 1 + ceil(topics / 256)
// requests (the nodes whose watch is armed go in ZooKeeper's multiRead,
// which a server before 3.6 answers "unimplemented": then one getData
// each). A node whose watch fired is read on its own, to arm it again.
//
// Watches fire once; each is armed again by the read that follows, and at
// most one is pending per node. Events are coalesced (Config.Debounce).
// When the connection is lost the client reconnects by itself and sets its
// watches again (the server fires those whose node changed meanwhile); when
// the session expired every watch fires and everything is read and armed
// again on the new session. Failed reads are retried with a jittered exponential backoff
// (internal/retry, 250ms growing to 10s) while Snapshot keeps serving the
// last good view and Err says why; a node that could not be read stays
// stale until it is read. Malformed topic nodes are logged once and skipped
// (the topic stays listed, without partitions) until their watch fires; a
// topic deleted mid-read drops out.
//
// Goroutines: one loop per Watcher (a tomb) and up to eight readers
// during a refresh; none per watch (a node-event hook of the session
// follows each watched node), and the session's own. Close stops the
// Watcher's; the session stays open.
package metadata

package metadata

// watchKey names an armed ZooKeeper watch: the topic list (root) or one
// topic's node.
type watchKey struct {
	root  bool
	topic string
}

// partMeta is a partition as its topic node lists it.
type partMeta struct {
	ID       int32
	Replicas []int32
}

// nodeRead is one topic node's read by partitionsMany: its partitions or
// the error (errNoNode, a malformed node's, or another of the server's),
// and the version of the node's data it read (0 unknown; two reads with
// the same version read the same data). same: the version is the one the
// caller already had, and the data was not decoded (parts is nil).
type nodeRead struct {
	parts   []partMeta
	err     error
	version int64
	same    bool
}

// store is the watcher's access to ZooKeeper. The implementation is
// zkStore, over a zkconn.Session; tests use a fake. Methods other than close are safe for
// concurrent use and block on one or two ZooKeeper round trips. It reads
// the topic list and topic nodes only: never a partition state node.
type store interface {
	// topics lists the topic names. With watch, it also arms a child watch
	// on the topic list and reports whether it did.
	topics(watch bool) (names []string, armed bool, err error)
	// partitions reads a topic node, and the version of its data (see
	// nodeRead). With watch, it also arms a data watch on it and reports
	// whether it did (a watch may be armed even when the data turns out
	// malformed). had is the version of the data the caller already
	// holds (0: none): a node still at it is not decoded (parts nil, err
	// nil).
	partitions(topic string, watch bool, had int64) (parts []partMeta, version int64, armed bool, err error)
	// partitionsMany reads topic nodes without arming watches, in as few
	// requests as the store can (ZooKeeper's multiRead: one per 256
	// nodes), and returns one result per topic, in order. err is the
	// request's (the connection failed); a node's own failure is in its
	// result. had, when not nil, holds for each topic the version of the
	// data the caller already holds (0: none): a node still at it is not
	// decoded again (its result says same).
	partitionsMany(topics []string, had []int64) ([]nodeRead, error)
	// close stops reporting fired watches and, when the store owns its
	// session, closes it and blocks until its goroutines have stopped.
	close() error
}

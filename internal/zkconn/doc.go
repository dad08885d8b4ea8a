// Package zkconn is zkgroup's ZooKeeper plumbing: one go-zookeeper session
// with a chroot, credentials and ACLs, whose health is tracked against a
// clock that keeps running, so that a paused or partitioned process learns
// that its ephemeral nodes may be gone before it acts on them.
//
// It is internal: the manager package owns the only Session of a consumer.
package zkconn

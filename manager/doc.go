// Package manager runs zkgroup's consumer manager: Join registers an
// instance of a consumer group in ZooKeeper, watches the group's members
// and the subscription's topics, partitions and preferred leaders, computes which
// partitions this instance owns with an assignment strategy, claims each
// one with an ephemeral owner node and runs a partition manager for it.
//
// The ZooKeeper layout is Kafka's own:
//
//	/consumers/<group>/ids/<instance>       ephemeral, the member's registration
//	/consumers/<group>/owners/<topic>/<p>   ephemeral, the partition's owner
//	/consumers/<group>/offsets/<topic>/<p>  persistent, with ZooKeeper offset storage
//
// Ownership is exclusive: a partition is consumed only after its owner node
// was created by this instance's current session; a revoked partition is
// drained and committed before its node is deleted; a new owner waits on a
// watch of the node, without giving up, until it is gone. When the session
// is suspended (no reply within 2/3 of its timeout) no message is handed out
// and nothing is committed; when it expires every partition stops at once,
// the instance registers again and the group rebalances.
package manager

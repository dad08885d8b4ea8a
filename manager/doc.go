// Package manager is zkgroup's consumer group: Join registers an instance
// of a group in ZooKeeper, watches the group's members and the
// subscription's topics and partitions, computes which partitions this
// instance owns with an assignment strategy, claims each one with an
// ephemeral owner node and consumes it. The loop needs this package alone:
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	sub, _ := manager.Static("orders")
//	c, err := manager.Join(ctx, "billing", sub, "zk1:2181/kafka", nil)
//	if err != nil {
//		return err
//	}
//	for msg, err := range c.Each(ctx) { // ends on the signal
//		if err != nil {
//			return err
//		}
//		process(msg)
//		msg.Ack()
//	}
//	return c.Close() // drains, commits, releases, leaves
//
// With the defaults this is the fast path: messages are fetched a batch
// per partition at a time and handed over one by one in the caller's
// goroutine, each checked against its partition's ownership first.
// Other forms: Messages is the same stream as a channel, the shape of the
// old ZooKeeper consumers' API (a select over Messages(), Errors() and a
// shutdown signal; Ack, Interrupt, Close as there); Poll hands out a batch
// at a time (one partition's messages, acked as a whole with Batch.Ack);
// with Config.Mode = ModePartitions, EachPartition hands out a stream per
// owned partition, each consumed by a goroutine of its own (a slow
// partition then holds up only itself). A method of the other mode
// returns (or yields) ErrMode; Messages then returns a closed channel and
// reports ErrMode on Errors() and from Err.
//
// The ZooKeeper layout is Kafka's own:
//
//	/consumers/<group>/ids/<instance>       ephemeral, the member's registration
//	/consumers/<group>/owners/<topic>/<p>   ephemeral, the partition's owner
//	/consumers/<group>/offsets/<topic>/<p>  persistent, with ZooKeeper offset storage
//
// and two nodes of zkgroup's own beside it, which Kafka's tools ignore:
//
//	/consumers/<group>/assignment           persistent, the group's last assignment
//	/consumers/<group>/static/<instance>    persistent, a restart marker (Config.RestartGrace)
//
// Rebalancing. Every member computes the same assignment from the same
// ZooKeeper state, with no leader: the members, the subscribed partitions
// and the group's last assignment, which the oldest member stores with a
// digest of what it was computed from. A member takes the stored
// assignment as it is while that digest is the one of what it reads;
// otherwise it waits for the oldest member to store the assignment of
// what it reads (at most Config.ClaimWaitCheck), and then computes the
// next one itself with the stored owners as the current ones, as every
// member reading the same node does. Where a member
// publishes a strategy but not "zkgroup_assignment" in its registration
// (an older zkgroup), or the node is missing, malformed or older than the
// oldest member's registration, members compute from the owner nodes
// instead. The default strategy,
// assign.Balanced(), moves only what must move (a join takes about P/N
// partitions, a leave hands out only the leaver's) and gives the same plan
// from every state of its own hand-over, so members reading the owners at
// different moments agree. Each member publishes its strategy's name in its
// registration; members that see another name report it on Errors()
// (*StrategyMismatchError) and meanwhile all compute with the oldest
// member's strategy, so that they still agree. A member recomputes only when something that
// decides the assignment changed: the members, a subscribed topic's
// partitions, or its ZooKeeper session. A partition leader change is not
// one (the fetcher follows the new leader), nor is a partition stopping or
// starting.
//
// Ownership is exclusive: a partition is consumed only after its owner node
// was created by this instance's current session; a revoked partition is
// drained and committed before its node is deleted; a new owner waits on a
// watch of the node, without giving up, until it is gone. When the session
// is suspended (no reply within 2/3 of its timeout) no message is handed out
// and nothing is committed; when it expires every partition stops at once,
// the instance registers again and the group rebalances.
//
// Ownership is a lease, read on a monotonic clock: it holds until 2/3 of
// the session timeout after the send of the latest request ZooKeeper
// answered (the server keeps the session a whole timeout after it read
// that request, so no one else can claim the partition before then). Before
// each message or batch is handed out, and before each commit, the clock
// is read, not only the session's state: a process that wakes from a pause
// (SIGSTOP, a stalled VM) hands out and commits nothing until ZooKeeper
// answered again. The lease is kept fresh by pings: while messages are
// handed out or committed, one every sixth of the timeout (the lease has
// half of it left when a ping goes); while nothing is, go-zookeeper's own,
// one every third, which leave it a third (an idle member's session then
// reads as suspended when ZooKeeper answers more than a third of the
// timeout late). Every commit request carries the lease's end as its
// deadline: nothing is written after it, and a request still unanswered
// then is abandoned with its connection torn down; the connections that
// carry commits close with SO_LINGER 0, so neither an abandoned request nor
// one queued when the process is killed can reach the broker later (see
// package offsets). Each Kafka commit carries its claim's fencing token
// (the owner node's czxid) as metadata; Stats.Regressions counts commits
// read back that were written under an older claim than one seen before.
//
// What no check can cover: a message already handed to the application
// when the process froze (the application goes on processing it after the
// pause). Each and PartitionStream.Each read the clock in the caller's
// goroutine before every message; Poll hands out a whole batch at once,
// checked when it was handed out. Messages holds up to MessagesBuffer (16)
// messages ahead of its receiver, each checked when it was put in; they are
// taken back when a suspension begins or their partition stops, but after
// a freeze the receiver, waking with the process, may take those 16 before
// any goroutine noticed that the lease had ended.
//
// Kafka reachability: a member that no broker answered for
// Config.KafkaUnreachableTimeout (default 45 s, as Kafka's
// session.timeout.ms), or that cannot reach the group's coordinator for as
// long, while ZooKeeper still answers, leaves the group: every partition stops at once, without a
// drain or a commit (its commits carry a deadline no later than Kafka's
// last answer + that bound, so none is still waiting), its owner nodes and
// then its registration are deleted, and the others take its partitions
// over from the last commit. It probes Kafka on connections of its own and
// joins again once the brokers have answered for a probe interval in a
// row. A member whose last probe failed takes no partition meanwhile, so
// that when every member is cut off each stays out, nothing moving between
// them, until it reaches Kafka again. A broker's answer that the group has
// no coordinator now (its offsets partition being created, moved or
// loaded) is an answer: only an unreachable broker or coordinator counts.
// A crashed coordinator broker that the controller takes longer than the
// bound to replace makes every member leave until the new one answers.
//
// Reads: a rebalance reads the member list, the list of restart markers
// (see Config.RestartGrace), the registrations that are new or changed
// since it last read them, and the assignment node if it changed:
// whatever the partition count, at most N+1 nodes for N members, one
// registration and the node after a join. Each registration read carries
// a data watch (a changed one is a membership change), and so does the
// assignment node: while a watch has not fired the node is not read
// again. A rewrite of the assignment node that holds what the member
// computed costs one read and no parse.
// Computing from the owners, it reads the owners nodes' stats and, where
// they changed, their lists and the owner nodes it cannot vouch for. It
// sets no watch on the owner nodes. On an older server it reads them one
// by one.
//
// Writes: a claim is one create of its owner node, watched, and a
// release one delete; the creates (and the deletes) a member makes at
// about the same time go to ZooKeeper in multi requests of up to 500
// nodes, one transaction each. A transaction of creates returns each
// node's stat (create2) and is followed by one setWatches request on its
// nodes; on a server older than 3.6 the creates are plain and each node
// is read back with a watch (a getData each). A multi that fails (a node
// held after all) is sent each on its own, and read back. The oldest
// member writes the assignment node when the group changes.
//
// Commits: every Config.Partition.CommitInterval, one request per
// coordinator carries the acked offsets of every owned partition; the
// final commit before a partition is released is read back.
//
// Rebalance callbacks. Config.OnAssigned, OnRevoked and OnLost have the
// shape of franz-go's OnPartitionsAssigned, Revoked and Lost: each gets a
// context, the consumer and the partitions by topic (sorted). One
// goroutine of the consumer calls them, one call at a time, never two at
// once; each call carries every partition of its event:
//
//   - OnAssigned: the partitions a rebalance gave this member, once it
//     holds their claims (owner nodes) and before the first message of any
//     of them is handed out: they start delivering when it returns. With
//     offsets in Kafka each partition's committed offset is read, and its
//     fetch opened there, as soon as its claim is held, while the call
//     waits for the others and runs: a commit another client makes from
//     OnAssigned is not seen (use Consumer.Seek once the partition runs).
//     With offsets in ZooKeeper the read and the fetch come after the
//     call. A claim waits for the previous owner to
//     release the partition, which it does after its OnRevoked returned:
//     the next owner's OnAssigned comes after the previous owner's
//     OnRevoked. The partitions claimed wait at most Config.ClaimWaitCheck
//     for the claims still under way: a claim that takes longer (its holder
//     does not let go) is named in a later call. Claims that overlap (a
//     later rebalance, partitions claimed again after a loss) are named
//     together.
//   - OnRevoked: the partitions a rebalance took from this member, or that
//     Close stopped, once every one of them stopped handing out, was
//     drained (its handed-out messages acked, or
//     Config.Partition.DrainTimeout passed) and had its final offset
//     committed (a failed final commit is reported on Errors()), and
//     before any of their claims is released. Their releases, and so
//     their next owners, wait for the slowest drain of the group and then
//     for OnRevoked: a slow OnRevoked delays the handoff by as long as it
//     takes.
//   - OnLost: the partitions lost without a handoff: every partition held
//     under a ZooKeeper session that expired, in one call; every
//     partition stopped because the member left the group for Kafka not
//     answering (Config.KafkaUnreachableTimeout), in one call; a partition
//     whose owner node was deleted or taken over, or whose partition
//     manager failed, on its own. Called once they stopped handing out and
//     committing, with no drain and no final commit: what was handed out
//     and not committed is delivered again to the next owner, which may
//     own them already. A lost partition is never passed to OnRevoked. If
//     it is still this member's, it is claimed again after OnLost returned
//     (and named in a new OnAssigned).
//
// The waits are only for callbacks that are set: with OnAssigned nil each
// partition starts as soon as it is claimed, with OnRevoked nil each is
// released as soon as it is drained and committed, as a partition lost is
// with OnLost nil.
//
// Their ctx is canceled once the consumer is closing (Close or Interrupt
// was called); it is then also canceled for the OnRevoked of the
// partitions that Close stops. A callback may call the consumer's Stats,
// ID, Group and Interrupt, but not Close, which waits for it.
//
// Leaving: Close stops every partition (drain, final commit), then closes
// the ZooKeeper session, which deletes every owner node in one
// transaction. When every member of the group follows the assignment node,
// the registration is deleted first, as the partitions begin to drain: the
// peers rebalance meanwhile, their claims waiting on the owner nodes, and
// a member that left keeps those for up to CloseTimeout + SessionTimeout
// before a peer reports them squatted. Otherwise (Kafka's own consumer or
// an older zkgroup in the group) the registration goes in that same
// transaction, and the peers see the member and its claims go together.
// Close returns once ZooKeeper has read the session's close request,
// without waiting for that transaction's commit: the nodes go moments
// after Close returns (nothing of the member runs by then).
//
// What an owned partition costs: no goroutine while it is idle (its slot
// claims it on a goroutine, runs its partition manager's loop there while
// it has messages to hand out, parks it in between with no goroutine,
// and drains, commits and releases it at the end; in ModeMerged at most
// 16 partitions at a time hold a turn to hand out, and the rest with
// messages wait for one without a goroutine, so that a loop that takes
// batches slower than they come holds about 16 goroutines, not one per
// partition;
// TestGoroutinesPerPartition guards it); no timer while idle; its claim's
// watch is a session hook, not a goroutine. Fetching costs no goroutine per partition: the member
// runs one fetch loop per broker it fetches from, each on a connection of
// its own, for every owned partition that broker leads, built on sarama's
// protocol layer (a partition whose messages are not taken is left out of
// the requests once it buffers two response shares, without slowing the
// others). Memory: those buffers, and up to PartitionConfig.MaxUnacked
// messages handed out and not yet acked (their ack tracking costs about
// 17 bytes each, given back once the partition is idle).
package manager

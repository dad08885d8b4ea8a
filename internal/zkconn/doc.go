// Package zkconn is zkgroup's ZooKeeper plumbing: one go-zookeeper session
// with a chroot, credentials and ACLs, whose health is tracked against a
// clock that keeps running, so that a paused or partitioned process learns
// that its ephemeral nodes may be gone before it acts on them.
//
// It is internal: the manager package owns the only Session of a consumer,
// which also carries the member's metadata reads and watches
// (internal/metadata.OpenSession): one ZooKeeper connection per member.
//
// # Buffers
//
// go-zookeeper v1.0.4 holds two buffers per session, both live heap (and
// so raising the garbage collector's heap goal) for as long as they are
// held:
//
//   - the send buffer, allocated once per session. go-zookeeper's default
//     is 1.5 MiB (1,572,864 bytes); a Session's is 4 bytes (the length
//     prefix) + Config.MaxRequest (WithMaxConnBufferSize). Its default,
//     MaxRequestAny, is the longest request ZooKeeper accepts,
//     jute.maxbuffer (0xfffff by default; the server drops a connection
//     that sends more): 1 MiB, for sessions that may write any node (the
//     operator commands). A consumer group member's session asks for
//     MaxRequestMember, 256 KiB: its longest requests are an offsets
//     multi of up to 1,000 writes (about 100-150 bytes each at usual name
//     lengths; a longer one fails unsent and offsets.ZooKeeperStore
//     writes its entries one by one) and its registration. A request over
//     the buffer fails unsent with zk.ErrShortBuffer; the session stays.
//   - the receive buffer, allocated for each connection as the smaller of
//     1.5 MiB and the reply cap (Config.MaxReply, WithMaxBufferSize), and
//     replaced by a larger one, up to the cap, when a reply does not fit.
//     go-zookeeper v1.0.4 starts at the cap only when it is smaller than
//     1.5 MiB, and offers no other way to start smaller. A data reply is
//     at most jute.maxbuffer + 67 bytes, just over 1 MiB (1,048,576): a
//     getData reply is the data plus 88 bytes of header, length and stat,
//     and the setData request that wrote the data, at most jute.maxbuffer
//     long, spent at least 21 bytes on header, path and version. But the
//     server does not bound a children list: /brokers/topics lists every
//     topic (4 bytes plus the name each). Kafka's brokers read it with a
//     4 MiB cap (KafkaZkClient sets jute.maxbuffer to 4,194,304 unless
//     configured), the cap of MaxReplyAny, a Session's default (the
//     operator commands). A consumer group member's cap is
//     manager.Config.ZooKeeperMaxReply, 512 KiB by default: its longest
//     replies are the topic list (about 12,000 topics of 40 characters
//     fit), peers' registrations and the owner nodes of a topic (about
//     70,000 partitions fit).
//
// A reply over the cap: go-zookeeper reads its length, drops the
// connection (failing every request in flight with
// zk.ErrConnectionClosed) and reconnects to the same session; reading the
// node again would drop the connection again. So replyGuard, a wrapper of
// each connection, notes which read every request is (xid, opcode, path),
// follows the replies' framing, and on a length over the cap reads the
// xid that follows and names the read. That read returns a
// *ReplyTooLargeError (ErrReplyTooLarge, with the node, the size, the cap
// and the setting that sets it), and the Session refuses further reads of
// the node, unsent, with the same error. A multi's reply over the cap is
// logged (its caller sees the connection drop).
//
// # Batched reads
//
// Session.GetMany reads many nodes in ZooKeeper's multiRead request
// (3.6 and later), up to 256 per request, which the server serves in one
// pass: 1,000 owner nodes take about 3 ms where 1,000 getData requests
// take 80-130 ms on an idle server (it serves one session's requests one
// after another). go-zookeeper v1.0.4 has no call for it, so sideConn, a
// wrapper of each connection under replyGuard, writes the request between
// go-zookeeper's own (one whole request per Write either way) with an xid
// below any go-zookeeper uses, and takes the reply out of the stream
// before go-zookeeper reads it. The reply has its own cap, the session's
// reply cap. A server that answers "unimplemented" gets one getData per
// node from then on.
//
// Session.GetManyW reads nodes so and watches them too: one setWatches
// request per batch, relative to the zxid of the batch's read, so that a
// node changed or deleted after the read fires at once. These watches
// are the session's own (go-zookeeper does not know of them): their
// events reach the node hooks (OnNodeEvent), and the session sets them
// again, relative to the highest zxid of its own replies, as the first
// request on each new connection of a live session (sideConn, at the
// connect reply), before anything of go-zookeeper's. A claim read back
// this way costs its member two requests per 256 nodes where a getData
// with a watch each cost one per node.
//
// # go-zookeeper versions
//
// sideConn, replyGuard, gatedConn and cappedConn speak ZooKeeper's wire
// protocol under go-zookeeper and rely on the internals of
// TestedGoZooKeeper (v1.0.4): its xid numbering and ping frame, one
// Write per request,
// when it re-sends watches, how it answers a failed write. Dial reads
// which go-zookeeper the program was built with (runtime/debug build
// information). On another version, or a replaced module, the session
// runs plain: go-zookeeper reads and writes the dialled connection
// itself, and Dial logs so once, at Warn, naming both versions. Then:
//
//   - GetMany reads each node with its own getData (the same results, a
//     round trip per node: about 100 ms for 1,000 nodes where multiRead
//     takes a few), and GetManyW returns ErrNoRawWatches (its callers
//     read each node with GetWFull).
//   - A reply over the cap (Config.MaxReply) is go-zookeeper's own
//     affair: v1.0.4 drops the connection, failing what was in flight
//     with zk.ErrConnectionClosed, each time the node is read; no
//     *ReplyTooLargeError names the node, and nothing stops it being read
//     again.
//   - Nothing holds a reconnected session's replies until its watches
//     are re-sent: v1.0.4's data race on the last zxid (see gatedConn) is
//     the version's own, fixed or not.
//   - go-zookeeper's own pings (every third of the timeout) do not renew
//     the lease: the monitor sends one of its own, an Exists through
//     go-zookeeper, whenever nothing was answered for a sixth of the
//     timeout, beside them (see pingLog for how they count otherwise).
//   - go-zookeeper's own deadlines apply (v1.0.4 waits 10 times its
//     receive timeout for a connect reply: see cappedConn), a failed
//     write is go-zookeeper's to answer, and Close waits for the close
//     request's reply (at most a second in v1.0.4) rather than
//     half-closing after it.
//
// What stays: the chroot, ACLs, credentials, the lease and Status (the
// dial time is taken in the dialer, answers from go-zookeeper's calls),
// Interrupt and the paced host provider (go-zookeeper's public options),
// the buffer sizes, and the negotiated timeout when the version logs it
// as v1.0.4 does (else the asked one is used; see zkLogger).
//
// So a session holds 2.5 MiB of buffers (1 MiB + 1.5 MiB), a member's
// 768 KiB (256 KiB + 512 KiB), where go-zookeeper's defaults hold 3 MiB.
// Before the member's metadata reads moved onto this session, kazoo-go's
// samuel client held 2 x 1.5 MiB more on a second connection.
package zkconn

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
//     1.5 MiB and the reply cap, and replaced by a larger one, up to the
//     cap, when a reply does not fit. go-zookeeper's default cap is none;
//     a Session's is 4 MiB (WithMaxBufferSize). A data reply is at most
//     jute.maxbuffer + 67 bytes, just over 1 MiB (1,048,576): a getData
//     reply is the data plus 88 bytes of header, length and stat, and the
//     setData request that wrote the data, at most jute.maxbuffer long,
//     spent at least 21 bytes on header, path and version. But the server
//     does not bound a children list: /brokers/topics lists every topic
//     (4 bytes plus the name each). Kafka's brokers read it with a 4 MiB
//     cap (KafkaZkClient sets jute.maxbuffer to 4,194,304 unless
//     configured) where the Java client's default would refuse anything
//     over 0xfffff, so a member accepts what the brokers do. A reply over
//     the cap closes the connection (go-zookeeper reconnects, and the same
//     read fails again). With any cap of 1.5 MiB or more the buffer starts
//     at 1.5 MiB: go-zookeeper v1.0.4 starts at the cap only when it is
//     smaller, and offers no other way to start smaller.
//
// So a session holds 2.5 MiB of buffers (1 MiB + 1.5 MiB), a member's
// 1.75 MiB (256 KiB + 1.5 MiB), where go-zookeeper's defaults hold 3 MiB. Before the member's metadata reads
// moved onto this session, kazoo-go's samuel client held 2 x 1.5 MiB more
// on a second connection.
package zkconn

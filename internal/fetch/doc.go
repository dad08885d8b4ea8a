// Package fetch fetches Kafka partitions on sarama's protocol layer, in
// place of sarama's Consumer: one fetch loop per broker for every added
// partition that broker leads, and each partition's records handed to its
// consumer a whole response share at a time, straight from the
// response's bytes.
//
// Reading the records: sarama's Broker does the connection (TLS, SASL,
// the handshake), sends the requests and decodes each response's
// partitions (errors, offsets, epochs, aborted transactions), but not
// their record batches: the loop's connection (tap) takes each
// partition's records out of a fetch response before sarama reads it, and
// the fetcher reads the batches itself (Batch: the header and CRC when a
// batch is reached, each record when it is handed over, through a Cursor;
// no Record value per record, no second pass). A batch that does not
// check out (CRC, lengths, count, decompression) is reported (ErrFetch)
// and fetched again after RetryBackoff, never skipped. Legacy message
// sets (magic 0 and 1) are left to sarama's decoder, as is everything
// with Config.SaramaDecodes. The tap also hands sarama each topic of a
// response once: a broker answering in a fetch session names a topic
// again wherever its session's order interleaves topics, and sarama keeps
// only a topic's last entry (the others' partitions would wait for a
// later response).
//
// Use:
//
//	f, err := fetch.New(client, fetch.ConfigFromSarama(client.Config()), log)
//	p, err := f.Add("topic", 3, offset) // a real offset
//	for {
//		recs, err := p.Take(ctx) // or <-p.Ready() and p.Poll()
//		switch {
//		case errors.Is(err, fetch.ErrOffsetOutOfRange):
//			p.SetOffset(policy()) // stopped until then
//		case errors.Is(err, fetch.ErrFetch):
//			log(err) // a report: fetching goes on
//		case err != nil:
//			return err // ErrClosed, ctx's error
//		}
//		for r := range recs.All() {
//			use(r.Offset, r.Key, r.Value) // no copy: the slices are the caller's
//		}
//	}
//	p.Close() // stop fetching it; f.Close() stops everything
//
// Goroutines and timers: a Fetcher runs one router goroutine (finds
// leaders; waits on a channel while it has nothing to route, a timer only
// while a partition waits out RetryBackoff) and one loop goroutine per
// broker it has fetched from (waits on a channel while none of its
// partitions can be fetched, a timer only while the broker throttles).
// A partition costs no goroutine and no timer, nor need its consumer
// keep one waiting on Ready: Notify calls a function whenever Ready is
// signalled (internal/partition parks an idle partition's run and resumes
// it so).
//
// Flow control: a partition buffers at most PartitionBuffer (default 2)
// Records (each its share of one response, at most PartitionMaxBytes
// unless a larger batch made it grow). While its buffer is full the
// partition is left out of its broker's requests (forgotten by its fetch
// session), so a consumer that does not take stops its partition only; a
// take puts it back into the next request. With 2, the next share is in
// flight while the consumer works. A request made while some partition
// is held so has a short MaxWait (5 ms, growing by a quarter per request
// to MaxWait), so that the take is not kept waiting behind a long poll
// for the others.
//
// Fetch sessions (KIP-227; Config.Sessions, on by default, from the
// client's Kafka version 1.1): each broker loop keeps a session with its
// broker, so that after a full request a request names only the
// partitions whose offset, size or epochs changed (those that got records
// last time, those added, those taken from again) and forgets those that
// must not be fetched now; a response names only the partitions with
// records or news. An idle partition costs nothing per fetch, on either
// side. A session error from the broker, a new connection or the start
// make the next request full. sarama has no setter for the forgotten
// partitions (nor for the last fetched epoch below): the fetcher writes
// them into sarama's request (package internal/saramawire), and goes
// without both if a sarama version lays them out otherwise.
//
// Topic ids (KIP-516; from the client's Kafka version 3.1, over a client
// that knows topic ids such as internal/leadercache's): requests name
// topics by id (Fetch v13), which sarama does not encode; the loop's
// connection rewrites sarama's v12 request and the broker's v13 response
// (topicids.go). A session by id holds any number of partitions (see
// Config.MaxSessionPartitions). A topic deleted and created again under
// its name answers UNKNOWN_TOPIC_ID to its old id: its partitions are
// routed again after a metadata refresh and fetched by the new id from
// their positions, where the new log's epochs may make it a truncation
// (TruncationError): its consumer starts such a topic over.
//
// Fair share: each response is limited to MaxResponseSize and each
// partition to its size; the broker fills a response in request order
// (in a session, in its session's order, moving the partitions that
// returned data to the end), and sarama encodes a request's partitions
// from a map, whose order Go randomises on every request, so every
// partition is as likely to come first. A partition that still went
// without data twice while it had some is asked for alone (with the other
// starved ones, beside the session) next.
//
// Idle long poll: a broker loop whose responses brought nothing four
// times in a row (every partition caught up, no error) asks the broker to
// wait up to IdleWait (default 10 s; franz-go's fetch wait is 5 s)
// instead of MaxWait (500 ms, Kafka's): an idle member then sends about
// one request per broker every 10 s, not two a second, and wakes that
// seldom for it. Records still come as soon as they are written (the
// broker answers a long poll once MinBytes are there), and the first
// response with anything in it brings MaxWait back. What waits longer: a
// broker that stops answering without closing the connection (a cut
// network) fails an idle loop's request IdleWait plus the read timeout
// after it went (Fetcher.LongPoll is the wait the manager's reachability
// watch allows for).
//
// Latency of a change: Add, SetOffset and a take of a full partition apply
// from the broker's next request. A request with MaxWait under way is not
// cut short: while every other partition of the broker is caught up it is
// a long poll, and the change waits for it, up to MaxWait (the take of a
// full partition excepted, see above). A request with IdleWait is cut
// short by such a change: the loop closes its connection (the broker
// drops the request; Stats.Cuts counts them) and asks at once on a new one
// (a new connection starts a new fetch session: one full request), so a
// partition added after a claim waits neither IdleWait nor MaxWait behind
// an idle loop. A cut costs a connection (a TCP handshake, and TLS and
// SASL when configured) once per change that finds the loop idle: the
// requests that follow use MaxWait until the loop is idle again, so a
// burst of changes (a rebalance) cuts once. Choose MaxWait with the rest
// in mind.
//
// Memory: a record's Key and Value are slices of the response's buffer
// (no copy, as with sarama's Consumer), so a buffered or kept
// Records of an uncompressed batch keeps its whole response buffer (up to
// MaxResponseSize) alive, however few of its records it holds.
//
// Errors per partition: leader moves (NotLeaderOrFollower,
// UnknownTopicOrPartition, LeaderNotAvailable, ...) and lost broker
// connections are reported (ErrFetch) and the partition is routed to its
// leader again after a metadata refresh; OffsetOutOfRange stops the
// partition with ErrOffsetOutOfRange until SetOffset.
//
// Leader epochs (KIP-320): fetches carry the partition's leader epoch
// from the client's metadata (Kafka 2.1, Fetch v9); a broker that answers
// FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH (its metadata or ours is
// behind) has the partition routed again after a metadata refresh,
// without a report. From Kafka 2.7 (Fetch v12) fetches also carry the
// epoch of the last record batch fetched, and the broker checks that its
// log holds that epoch up to the fetch position (the check
// OffsetForLeaderEpoch makes; sarama has no such request): after an
// unclean leader election that truncated records already fetched, it
// answers with the diverging epoch and its end offset, and the partition
// stops with a *TruncationError (ErrLogTruncated, which also matches
// ErrOffsetOutOfRange: the caller's reset policy applies) and a log line
// with both offsets. Below 2.7 a truncation goes unnoticed, as before.
//
// Nearest replica (KIP-392): with Config.Rack (Kafka 2.3, Fetch v11) a
// leader whose brokers run a rack-aware replica selector names the
// replica to fetch from, and the partition moves to that broker's loop;
// it goes back to its leader after an error there (offset out of range
// included: the replica may be behind), when that broker's connection
// fails (and avoids it for ReplicaRecheck), and after ReplicaRecheck (the
// leader may name another one by then).
//
// Transactions: control batches are skipped; with ReadCommitted the
// broker returns records up to the last stable offset and the records of
// aborted transactions (per the response's aborted transactions list:
// producer id and first offset, up to the abort marker) are dropped.
// Compressed batches (gzip, snappy, lz4, zstd) are decompressed with the
// libraries sarama uses, within sarama.MaxDecompressedBatchSize.
//
// Needs Kafka 0.11 or later (Fetch v4).
package fetch

// Package fetch fetches Kafka partitions on sarama's protocol layer, in
// place of sarama's Consumer: one fetch loop per broker for every added
// partition that broker leads, and each partition's records handed to its
// consumer a whole response share at a time, straight from sarama's
// decoded record batches.
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
// A partition costs no goroutine and no timer.
//
// Flow control: a partition buffers at most PartitionBuffer (default 2)
// Records (each its share of one response, at most PartitionMaxBytes
// unless a larger batch made it grow). While its buffer is full the
// partition is left out of its broker's requests, so a consumer that does
// not take stops its partition only; a take puts it back into the next
// request. With 2, the next share is in flight while the consumer works. A request made while some partition
// is held so has a short MaxWait (5 ms, growing by a quarter per request
// to MaxWait),
// so that the take is not kept waiting behind a long poll for the others.
//
// Fair share: each response is limited to MaxResponseSize and each
// partition to its size; the broker fills a response in request order,
// and sarama encodes a request's partitions from a map, whose order Go
// randomises on every request, so every partition is as likely to come
// first. A partition that still went without data twice while it had
// some is asked for alone (with the other starved ones) next.
//
// Latency of a change: Add, SetOffset and a take of a full partition apply
// from the broker's next request. A request under way is not cut short:
// while every other partition of the broker is caught up it is a long
// poll, and the change waits for it, up to MaxWait (the take of a full
// partition excepted, see above). Choose MaxWait with that in mind.
//
// Memory: a record's Key and Value are slices of sarama's decoded
// response (no copy, as with sarama's Consumer), so a buffered or kept
// Records of an uncompressed batch keeps its whole response buffer (up to
// MaxResponseSize) alive, however few of its records it holds.
//
// Errors per partition: leader moves (NotLeaderOrFollower,
// UnknownTopicOrPartition, LeaderNotAvailable, ...) and lost broker
// connections are reported (ErrFetch) and the partition is routed to its
// leader again after a metadata refresh; OffsetOutOfRange stops the
// partition with ErrOffsetOutOfRange until SetOffset.
//
// Transactions: control batches are skipped; with ReadCommitted the
// broker returns records up to the last stable offset and the records of
// aborted transactions (per the response's aborted transactions list:
// producer id and first offset, up to the abort marker) are dropped.
// Compressed batches (gzip, snappy, lz4, zstd) are decompressed by
// sarama's decoder.
//
// Not supported: fetch sessions (KIP-227: every request names all its
// partitions), fetching from followers (KIP-392), leader epochs (KIP-320:
// requests carry none). Needs Kafka 0.11 or later (Fetch v4).
package fetch

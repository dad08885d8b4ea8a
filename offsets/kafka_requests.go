package offsets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/retry"
)

// fault classifies the outcome of one partition in one request.
type fault uint8

const (
	faultNone          fault = iota // done
	faultFinal                      // refused for good (authorisation, too large, group has members)
	faultLimited                    // refused, may pass on a retry (unknown topic or partition)
	faultCoordinator                // not (yet) the coordinator: not written; retry until the deadline
	faultUnsure                     // no answer (connection, request timed out): may have landed; retry until the deadline
	faultUnsureLimited              // incomplete answer: may have landed; retry a limited number of times
	faultFenced                     // the write's deadline passed (not sent, or cut unanswered): never retried
)

// retries reports whether the fault is retried, and whether only up to
// Consumer.Offsets.Retry.Max times.
func (f fault) retries() (retry, limited bool) {
	switch f {
	case faultCoordinator, faultUnsure:
		return true, false
	case faultLimited, faultUnsureLimited:
		return true, true
	}
	return false, false
}

// unsure reports whether a write that failed this way may have landed.
func (f fault) unsure() bool { return f == faultUnsure || f == faultUnsureLimited || f == faultFenced }

// classify maps the Kafka error code (or sarama.ErrIncompleteResponse) of
// one partition in an offset request; refresh reports that the group's
// coordinator should be looked up again.
func classify(err error) (f fault, refresh bool) {
	switch err {
	case nil:
		return faultNone, false
	case sarama.ErrNoError:
		return faultNone, false
	case sarama.ErrNotCoordinatorForConsumer, sarama.ErrConsumerCoordinatorNotAvailable:
		return faultCoordinator, true
	case sarama.ErrOffsetsLoadInProgress, sarama.ErrUnstableOffsetCommit:
		return faultCoordinator, false
	case sarama.ErrRequestTimedOut, sarama.ErrNotEnoughReplicas, sarama.ErrNotEnoughReplicasAfterAppend:
		return faultUnsure, false
	case sarama.ErrIncompleteResponse:
		return faultUnsureLimited, false
	case sarama.ErrUnknownTopicOrPartition, sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable:
		return faultLimited, false
	}
	return faultFinal, false
}

// attempts runs attempt for the pending entries (indices into errs and
// faults, which it sets) until none failed retriably, the retries of
// faultLimited entries are used up, ctx ends or no caller waits; it waits
// a jittered, growing backoff between attempts. The errors of entries that
// failed after more than one attempt say how many.
func (s *KafkaStore) attempts(ctx context.Context, live func() bool, what string, errs []error, faults []fault, attempt func(pending []int)) {
	pending := make([]int, len(errs))
	for i := range pending {
		pending[i] = i
	}
	tries := make([]int, len(errs))
	limit := s.client.Config().Consumer.Offsets.Retry.Max
	b := retry.New(s.cfg.RetryBackoff, s.cfg.RetryBackoffMax)
	for n := 1; ; n++ {
		attempt(pending)
		again := pending[:0] // overwrites only what was read
		for _, i := range pending {
			tries[i]++
			retry, limited := faults[i].retries()
			switch {
			case retry && (!limited || tries[i] <= limit):
				again = append(again, i)
			case errs[i] != nil && tries[i] > 1:
				errs[i] = fmt.Errorf("after %d attempts: %w", tries[i], errs[i])
			}
		}
		if len(again) == 0 {
			return
		}
		var stop error
		switch {
		case ctx.Err() != nil:
			stop = ctx.Err()
		case !live():
			stop = errNobodyWaits
		default:
			e := errs[again[0]]
			s.log.Debug(what+" failed retriably; retrying", "partitions", len(again), "attempt", n, "error", e)
			if !b.Wait(ctx.Done(), nil) {
				stop = ctx.Err()
			}
		}
		if stop != nil {
			for _, i := range again {
				errs[i] = fmt.Errorf("after %d attempts: %w: %w", tries[i], errs[i], stop)
			}
			return
		}
		pending = again
	}
}

// commitItems writes items in as few OffsetCommit requests per attempt
// as maxCommitBytes allows, each sent only before writeBy (see
// commitLink.send), and sets their err and fault.
func (s *KafkaStore) commitItems(ctx context.Context, live func() bool, items []*kitem, writeBy time.Time) {
	if len(items) == 0 {
		return
	}
	errs := make([]error, len(items))
	faults := make([]fault, len(items))
	s.attempts(ctx, live, "offset commit", errs, faults, func(pending []int) {
		s.commitOnce(items, pending, errs, faults, writeBy)
	})
	for i, it := range items {
		it.err, it.fault = errs[i], faults[i]
	}
}

// maxCommitBytes bounds the offset records one OffsetCommit request makes
// the coordinator append to __consumer_offsets. The append is refused
// whole over that topic's max.message.bytes (1 MiB by default; Kafka 3.9
// then answers OFFSET_METADATA_TOO_LARGE for every partition): a member
// committing 10,000 partitions of 40-character topics with its token
// reached it (5,000 passed). A quarter of the default leaves room for
// longer names and a lowered limit.
const maxCommitBytes = 256 << 10

// commitRecordBytes is at least the size of the offset record of one
// partition of topic committed by group with a token: the record's
// framing (about 10 bytes), its key (version, group, topic, partition:
// 10 bytes and the names) and value (version, offset, leader epoch,
// metadata, commit time: 24 bytes and the metadata).
func commitRecordBytes(group, topic string) int {
	return 64 + len(group) + len(topic) + len(tokenPrefix) + 20
}

// commitLinks is how many connections a store commits on at once: a
// round over maxCommitBytes (5,000 partitions of 30-character names) goes
// out in several requests, and the coordinator answers a connection's
// requests one at a time, each after its records were replicated.
const commitLinks = 4

// commitOnce sends the pending items in OffsetCommit requests of at most
// maxCommitBytes of records each (at least one item each), on up to
// commitLinks connections at once, one after the other on each. Each
// partition is in one request at most (a round writes a partition once:
// take), so no two writes of one partition are in flight together.
func (s *KafkaStore) commitOnce(items []*kitem, pending []int, errs []error, faults []fault, writeBy time.Time) {
	var parts [][]int
	for len(pending) > 0 {
		n, size := 0, 0
		for ; n < len(pending); n++ {
			size += commitRecordBytes(s.group, items[pending[n]].tp.Topic)
			if n > 0 && size > maxCommitBytes {
				break
			}
		}
		parts = append(parts, pending[:n])
		pending = pending[n:]
	}
	if len(parts) == 1 {
		s.commitRequest(s.links[0], items, parts[0], errs, faults, writeBy)
		return
	}
	var wg sync.WaitGroup
	for k, l := range s.links[:min(len(s.links), len(parts))] {
		wg.Go(func() {
			for i := k; i < len(parts); i += len(s.links) {
				s.commitRequest(l, items, parts[i], errs, faults, writeBy)
			}
		})
	}
	wg.Wait()
}

// commitRequest sends the pending items in one OffsetCommit request, as a
// simple group (generation -1, no member id), at the version the client's
// Config.Version allows, on the commit link l, before writeBy.
func (s *KafkaStore) commitRequest(l *commitLink, items []*kitem, pending []int, errs []error, faults []fault, writeBy time.Time) {
	coord, err := s.client.Coordinator(s.group)
	if err != nil {
		for _, i := range pending {
			errs[i], faults[i] = fmt.Errorf("find coordinator: %w", err), faultCoordinator
		}
		return
	}
	conf := s.client.Config()
	req := sarama.NewOffsetCommitRequest(conf, s.group)
	var ts int64 // only version 1 carries a commit time: "when received"
	if req.Version == 1 {
		ts = sarama.ReceiveTime
	}
	for _, i := range pending {
		it := items[i]
		req.AddBlockWithLeaderEpoch(it.tp.Topic, it.tp.Partition, it.next, -1, ts, FormatToken(it.token))
	}
	if time.Now().Before(writeBy) {
		s.stats.commitRequests.Add(1)
	}
	resp, _, err := l.send(coord, req, writeBy)
	if err != nil {
		f := faultUnsure
		if errors.Is(err, ErrLeaseExpired) {
			f = faultFenced
			s.stats.fenced.Add(1)
		} else {
			_ = s.client.RefreshCoordinator(s.group)
		}
		for _, i := range pending {
			errs[i], faults[i] = fmt.Errorf("offset commit to broker %d: %w", coord.ID(), err), f
		}
		return
	}
	refresh := false
	for _, i := range pending {
		it := items[i]
		var kerr error = sarama.ErrIncompleteResponse
		if e, ok := resp.Errors[it.tp.Topic][it.tp.Partition]; ok {
			kerr = e
		}
		f, r := classify(kerr)
		refresh = refresh || r
		faults[i], errs[i] = f, nil
		if f == faultNone {
			s.stats.committed.Add(1)
			if it.token != 0 {
				s.sawToken(it.tp, it.token, it.next, "written")
			}
			continue
		}
		errs[i] = fmt.Errorf("offset commit to broker %d: %w", coord.ID(), kerr)
	}
	if refresh {
		_ = s.client.RefreshCoordinator(s.group)
	}
}

// fetched is what the coordinator holds for one partition.
type fetched struct {
	next  int64
	ok    bool // false: nothing committed
	err   error
	token int64 // the commit's fencing token (0: none)
}

// fetchOffsets reads the committed offsets of tps (distinct) in one
// OffsetFetch request per attempt.
func (s *KafkaStore) fetchOffsets(ctx context.Context, live func() bool, tps []TopicPartition) []fetched {
	out := make([]fetched, len(tps))
	errs := make([]error, len(tps))
	faults := make([]fault, len(tps))
	s.attempts(ctx, live, "offset fetch", errs, faults, func(pending []int) {
		s.fetchOnce(tps, pending, out, errs, faults)
	})
	for i := range out {
		out[i].err = errs[i]
	}
	return out
}

// fetchOnce reads the pending partitions in one OffsetFetch request.
func (s *KafkaStore) fetchOnce(tps []TopicPartition, pending []int, out []fetched, errs []error, faults []fault) {
	fail := func(err error, f fault) {
		for _, i := range pending {
			errs[i], faults[i] = err, f
		}
	}
	coord, err := s.client.Coordinator(s.group)
	if err != nil {
		fail(fmt.Errorf("find coordinator: %w", err), faultCoordinator)
		return
	}
	parts := map[string][]int32{}
	for _, i := range pending {
		parts[tps[i].Topic] = append(parts[tps[i].Topic], tps[i].Partition)
	}
	req := sarama.NewOffsetFetchRequest(s.client.Config().Version, s.group, parts)
	s.stats.fetchRequests.Add(1)
	resp, err := coord.FetchOffset(req)
	if err != nil {
		_ = s.client.RefreshCoordinator(s.group)
		fail(fmt.Errorf("offset fetch from broker %d: %w", coord.ID(), err), faultUnsure)
		return
	}
	kerr := resp.Err
	if resp.Version >= 8 && len(resp.Groups) > 0 {
		kerr = resp.Groups[0].Err
	}
	if kerr != sarama.ErrNoError {
		f, refresh := classify(kerr)
		if refresh {
			_ = s.client.RefreshCoordinator(s.group)
		}
		fail(fmt.Errorf("offset fetch from broker %d: %w", coord.ID(), kerr), f)
		return
	}
	refresh := false
	for _, i := range pending {
		block := resp.GetBlock(tps[i].Topic, tps[i].Partition)
		var kerr error = sarama.ErrIncompleteResponse
		if block != nil {
			kerr = block.Err
		}
		f, r := classify(kerr)
		refresh = refresh || r
		faults[i], errs[i] = f, nil
		if f != faultNone {
			errs[i] = fmt.Errorf("offset fetch from broker %d: %w", coord.ID(), kerr)
			continue
		}
		out[i] = fetched{next: block.Offset, ok: block.Offset >= 0}
		if tok, ok := ParseToken(block.Metadata); ok && out[i].ok {
			out[i].token = tok
			s.sawToken(tps[i], tok, block.Offset, "read")
		}
	}
	if refresh {
		_ = s.client.RefreshCoordinator(s.group)
	}
}

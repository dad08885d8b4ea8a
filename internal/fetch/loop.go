package fetch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/shrink"
)

// heldWaitBase is the MaxWait of a request made while a partition of the
// broker is left out only because its consumer has not taken from its
// full buffer yet: the take usually follows within microseconds, and a long
// poll for the others would keep the partition out for up to MaxWait. It
// grows by a quarter with each such request up to MaxWait, so that a
// consumer that never takes costs about twenty short requests, then the
// usual long polls, while a take waits at most about a quarter of the
// time the partition was held.
const heldWaitBase = 5 * time.Millisecond

// idleAfter is how many quiet responses in a row (nothing fetched, no
// error, no partition left behind) make a loop idle: its requests then
// wait up to Config.IdleWait (see Fetcher.idleWait).
const idleAfter = 4

// brokerLoop is the fetch loop of one broker: one goroutine (run) and one
// connection of its own, fetching every partition the broker leads that
// is added to the fetcher.
type brokerLoop struct {
	f    *Fetcher
	id   int32
	addr string
	wake chan struct{} // cap 1: the partition set or a partition's state changed

	mu    sync.Mutex
	parts []*Partition
	conn  *sarama.Broker
	raw   net.Conn // conn's socket, closed to cut a fetch short at Close
	tap   *tap     // conn's, when the fetcher reads record batches itself
	// nextIDs: the topic ids of the request being sent (useIDs), for a
	// tap made after it was set.
	nextIDs *topicIDs
	closed  bool
	// long: a request with the idle wait is in flight on raw; cut: urge
	// closed raw to end it (see urge).
	long, cut bool

	// urged: a change wants a request at once (urge); build takes it.
	urged atomic.Bool

	records atomic.Uint64 // handed over (Stats)
	// answered: when the broker last answered a fetch, in nanoseconds
	// since the fetcher's birth (monotonic; 0: never). See Answered.
	answered atomic.Int64

	// run goroutine only
	throttleUntil time.Time
	inReq         []reqPart // the partitions the request fetches (named in it or not)
	snap          []*Partition
	sess          session
	kind          int                         // of the request: reqSessionless, reqFull, reqIncremental
	sent          []int                       // indexes in inReq of the partitions named
	forgot        []topicPartition            // the partitions an incremental request forgets
	inReqSet      map[topicPartition]struct{} // inReq's, for an incremental request that forgets (addBlocks)
	inReqSetPeak  shrink.Peak                 // of inReqSet
	ids           *topicIDs                   // the topics named so far with their ids (requestIDs)
	reqIDs        *topicIDs                   // the request's: nil when it goes by name
	quiet         int                         // quiet responses in a row (idleAfter)
	idle          bool                        // the request built waits up to the idle wait
}

// reqPart is a partition as a request asked for it.
type reqPart struct {
	p         *Partition
	offset    int64
	seq       uint64
	size      int32
	epoch     int32       // current leader epoch
	lastEpoch int32       // last fetched epoch
	replica   bool        // fetched from a replica the leader named, not the leader
	starved   bool        // went without data though it had some (build's, for a starved-only request)
	topicID   sarama.Uuid // the topic's id as routed (zero: unknown)
}

func newBrokerLoop(f *Fetcher, id int32, addr string) *brokerLoop {
	return &brokerLoop{f: f, id: id, addr: addr, wake: make(chan struct{}, 1)}
}

func (l *brokerLoop) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// urge wakes the loop for a change that must not wait behind a long
// poll of an idle loop (a partition added, sought, taken from a full
// buffer): the next request is made at once with MaxWait, and a request
// with the idle wait in flight is cut short by closing its socket (the
// broker drops it; run opens a new connection, which starts a new fetch
// session).
func (l *brokerLoop) urge() {
	l.urged.Store(true)
	l.mu.Lock()
	var raw net.Conn
	if l.long && l.raw != nil {
		raw, l.long, l.cut = l.raw, false, true
	}
	l.mu.Unlock()
	if raw != nil {
		_ = raw.Close()
	}
	l.poke()
}

// arm marks the request about to be sent as one with the idle wait, which
// urge cuts short; false (nothing marked) when an urge came since build
// or the connection is still being dialed: the request is built again,
// with MaxWait.
func (l *brokerLoop) arm() bool {
	l.mu.Lock()
	if l.raw == nil {
		// Still dialing (sarama opens in the background): nothing to
		// cut yet. Short polls until the connection is up.
		l.mu.Unlock()
		l.quiet = 0
		return false
	}
	l.long = true
	l.mu.Unlock()
	// urge sets urged before it looks at long: either it saw long set
	// (and cuts), or urged is seen here.
	if l.urged.Load() {
		l.disarm()
		return false
	}
	return true
}

// disarm ends the mark of arm once the request returned; it reports
// whether urge cut the request short.
func (l *brokerLoop) disarm() (cut bool) {
	l.mu.Lock()
	cut = l.cut
	l.long, l.cut = false, false
	l.mu.Unlock()
	return cut
}

// add makes the loop fetch p from its next request.
func (l *brokerLoop) add(p *Partition) {
	p.mu.Lock()
	p.loop = l
	p.mu.Unlock()
	l.mu.Lock()
	l.parts = append(l.parts, p)
	l.mu.Unlock()
	l.urge()
}

// release takes ps out of the loop (for rerouting).
func (l *brokerLoop) release(ps ...*Partition) {
	l.mu.Lock()
	l.parts = slices.DeleteFunc(l.parts, func(q *Partition) bool { return slices.Contains(ps, q) })
	l.mu.Unlock()
	for _, p := range ps {
		p.mu.Lock()
		if p.loop == l {
			p.loop = nil
		}
		p.mu.Unlock()
	}
}

func (l *brokerLoop) run() error {
	defer l.dropConn()
	dying := l.f.t.Dying()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-dying:
			return nil
		default:
		}
		req := l.build()
		if req == nil {
			select {
			case <-l.wake:
			case <-dying:
				return nil
			}
			continue
		}
		if d := time.Until(l.throttleUntil); d > 0 {
			// The broker asked us to hold back: wait, then build afresh.
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			select {
			case <-timer.C:
			case <-dying:
				return nil
			}
			continue
		}
		conn, err := l.connect()
		if err == nil && l.idle && !l.arm() {
			continue // urged since build: build again, with MaxWait
		}
		var resp *sarama.FetchResponse
		var raws []rawRecords
		if err == nil {
			l.count()
			l.useIDs(l.reqIDs)
			resp, err = conn.Fetch(req)
			raws = l.taken()
			if err == nil {
				l.answered.Store(max(int64(time.Since(l.f.born)), 1))
			}
		}
		cut := l.idle && l.disarm()
		switch {
		case err != nil && cut:
			l.recut() // not a failure of the broker
		case err != nil:
			l.fail(err)
		case l.handle(resp, raws) && !cut:
			l.quiet++
		default:
			l.quiet = 0
			if cut { // the answer came before the socket was closed
				l.recut()
			}
		}
	}
}

// recut drops the connection urge closed under a long poll: the next
// request goes on a new one, in full (the broker may have taken the cut
// request into the session).
func (l *brokerLoop) recut() {
	l.f.stats.cuts.Add(1)
	l.dropConn()
	l.sess.reset(true)
	l.quiet = 0
}

// build makes the next request from the partitions' state: closed ones
// leave the loop, those fetched from a replica past ReplicaRecheck go
// back to their leader, stopped ones and those whose buffer is full (the
// consumer has not taken) are left out (forgotten in a session; the
// latter shorten the request's MaxWait, see heldWaitBase). When some
// partition went without data for two responses though it had some
// (starved), only the starved ones are asked for, outside the session.
// It returns nil when there is nothing to fetch.
func (l *brokerLoop) build() *sarama.FetchRequest {
	// Both are reused from request to request: what the last one held is
	// cleared first, so that a partition closed since (and what its
	// consumer hangs on it) is not kept alive past their new length.
	clear(l.snap)
	l.mu.Lock()
	l.snap = shrink.Slice(append(l.snap[:0], l.parts...))
	l.mu.Unlock()
	cfg := &l.f.cfg
	clear(l.inReq)
	l.inReq = l.inReq[:0]
	if l.urged.Swap(false) {
		l.quiet = 0
	}
	wait := cfg.MaxWait
	if l.quiet >= idleAfter && l.f.idleWait > wait {
		wait = l.f.idleWait
	}
	starvedOnly := false
	var gone, back []*Partition
	var now time.Time
	for _, p := range l.snap {
		p.mu.Lock()
		if p.starved >= 2 && !p.closed && p.stop == nil && len(p.buf) < cap(p.buf) {
			starvedOnly = true
		}
		if p.replica == l.id && !p.closed && p.loop == l {
			if now.IsZero() {
				now = time.Now()
			}
			if now.After(p.replicaUntil) {
				back = append(back, p)
				p.mu.Unlock()
				continue
			}
		}
		switch {
		case p.closed || p.loop != l:
			gone = append(gone, p)
		case p.stop != nil:
		case len(p.buf) == cap(p.buf):
			p.held = true
			if p.heldWait == 0 {
				p.heldWait = heldWaitBase
			} else {
				p.heldWait = min(p.heldWait+p.heldWait/4, cfg.MaxWait)
			}
			wait = min(wait, p.heldWait)
		default:
			l.inReq = append(l.inReq, reqPart{p: p, offset: p.offset, seq: p.seq, size: p.size,
				epoch: p.leaderEpoch, lastEpoch: p.lastEpoch, replica: p.replica == l.id, starved: p.starved > 0,
				topicID: p.topicID})
		}
		p.mu.Unlock()
	}
	if starvedOnly { // only the starved ones are asked for (one lock per partition and request, not two)
		l.inReq = slices.DeleteFunc(l.inReq, func(rp reqPart) bool { return !rp.starved })
	}
	l.inReq = shrink.Slice(l.inReq) // before any pointer into it is taken
	if len(gone) > 0 {
		l.mu.Lock()
		l.parts = shrink.Slice(slices.DeleteFunc(l.parts, func(q *Partition) bool { return slices.Contains(gone, q) }))
		l.mu.Unlock()
	}
	if len(back) > 0 {
		l.f.log.Debug("fetching from the leaders again after ReplicaRecheck", "broker", l.id, "partitions", len(back))
		l.release(back...)
		l.f.reroute(false, false, back...)
	}
	if len(l.inReq) == 0 {
		return nil
	}
	l.idle = wait > cfg.MaxWait && !starvedOnly
	if !l.idle {
		wait = min(wait, cfg.MaxWait)
	}
	req := &sarama.FetchRequest{
		Version:     l.f.version,
		MinBytes:    cfg.MinBytes,
		MaxWaitTime: int32(max(wait/time.Millisecond, 1)),
		MaxBytes:    cfg.MaxResponseSize,
		Isolation:   cfg.Isolation,
		RackID:      cfg.Rack,
	}
	ids := l.requestIDs()
	l.reqIDs = ids
	tooMany := ids == nil && cfg.MaxSessionPartitions > 0 && len(l.snap) > cfg.MaxSessionPartitions
	if !tooMany && !starvedOnly && l.f.sessions && l.sess.epoch > 0 && l.sess.withIDs != (ids != nil) {
		l.sess.reset(true) // a session names topics by id or by name throughout
	}
	switch {
	case tooMany:
		// Every partition named, and the session (if any) closed: the
		// epoch -1 with its id ends it (see Config.MaxSessionPartitions).
		l.kind = reqSessionless
		req.SessionID, req.SessionEpoch = l.sess.id, -1
		l.sess.reset(false)
	case starvedOnly || !l.f.sessions:
		// No session (or a request beside it that leaves it as it is):
		// every partition is named.
		l.kind = reqSessionless
		req.SessionID, req.SessionEpoch = 0, -1
	case l.sess.epoch == 0:
		// Opens a session, closing the one named (if any).
		l.kind = reqFull
		req.SessionID, req.SessionEpoch = l.sess.id, 0
	default:
		l.kind = reqIncremental
		req.SessionID, req.SessionEpoch = l.sess.id, l.sess.epoch
	}
	// sarama encodes the blocks from a map, whose iteration order Go
	// randomises per request: the partition order rotates by itself (in a
	// session the broker rotates them).
	l.addBlocks(req)
	return req
}

// count counts the request build made as it is sent (a request built
// while the broker throttles is built again, not sent).
func (l *brokerLoop) count() {
	s := &l.f.stats
	if l.reqIDs != nil {
		s.byTopicID.Add(1)
	}
	switch l.kind {
	case reqSessionless:
		s.sessionless.Add(1)
	case reqFull:
		s.full.Add(1)
	default:
		s.incremental.Add(1)
	}
	s.partitionsSent.Add(uint64(len(l.sent)))
	s.forgotten.Add(uint64(len(l.forgot)))
	if h := l.f.onRequest; h != nil {
		h(l.id, l.kind, len(l.inReq), len(l.sent), len(l.forgot))
	}
}

// handle applies a response to the partitions asked for (in a session:
// to those of the session; a partition the response leaves out has
// nothing new). It reports whether the response was quiet: nothing
// fetched, no error, no partition left behind, not throttled.
func (l *brokerLoop) handle(resp *sarama.FetchResponse, raws []rawRecords) (quiet bool) {
	if resp.ThrottleTime > 0 {
		l.throttleUntil = time.Now().Add(resp.ThrottleTime)
	}
	if !l.sessionDone(resp) {
		return false // a session error: asked again, in full
	}
	if resp.ErrorCode != 0 {
		l.fail(fmt.Errorf("fetch response: %w", sarama.KError(resp.ErrorCode)))
		return false
	}
	quiet = resp.ThrottleTime <= 0
	committed := l.f.cfg.Isolation == sarama.ReadCommitted
	var moved, back []*Partition
	var movedErr error
	alone := len(l.inReq) == 1
	// A throttled response may come back empty: it says nothing of the
	// partitions' logs.
	throttled := resp.ThrottleTime > 0
	rawOf := rawIndex(raws)
	for i := range l.inReq {
		rp := &l.inReq[i]
		p := rp.p
		block := resp.GetBlock(p.topic, p.partition)
		if block == nil {
			continue // nothing new (in a session), or not answered (throttled): asked again
		}
		// Quiet only if the block brings nothing (the last case below).
		wasQuiet := quiet
		quiet = false
		if rp.replica && (!errors.Is(block.Err, sarama.ErrNoError) || block.DivergingEpoch != nil) {
			// The replica the leader named fell behind, lost the
			// partition or failed: back to the leader, which answers for
			// itself (an offset out of range there is the partition's).
			l.f.log.Debug("replica failed a fetch; back to the leader", "broker", l.id, "topic", p.topic, "partition", p.partition, "error", block.Err)
			back = append(back, p)
			continue
		}
		switch {
		case errors.Is(block.Err, sarama.ErrNoError):
		case errors.Is(block.Err, sarama.ErrOffsetOutOfRange):
			l.stop(rp, fmt.Errorf("%w: %s/%d at offset %d (log start %d, high watermark %d)", ErrOffsetOutOfRange,
				p.topic, p.partition, rp.offset, block.LogStartOffset, block.HighWaterMarkOffset))
			continue
		case errors.Is(block.Err, sarama.ErrFencedLeaderEpoch), errors.Is(block.Err, sarama.ErrUnknownLeaderEpoch):
			// Our metadata or the broker's is behind: routed again after
			// a refresh, not reported.
			moved = append(moved, p)
			movedErr = block.Err
			continue
		case leaderMoved(block.Err):
			moved = append(moved, p)
			movedErr = block.Err
			p.setReport(fmt.Errorf("%w: %s/%d: broker %d: %w", ErrFetch, p.topic, p.partition, l.id, block.Err))
			continue
		default:
			// Unexpected: report, and route again after a pause.
			p.setReport(fmt.Errorf("%w: %s/%d: broker %d: %w", ErrFetch, p.topic, p.partition, l.id, block.Err))
			l.release(p)
			l.f.reroute(true, true, p)
			continue
		}
		if d := block.DivergingEpoch; d != nil && (d.EndOffset < rp.offset || d.Epoch < rp.lastEpoch) {
			l.truncated(rp, d)
			continue
		}
		raw := rawOf(p.topic, p.partition)
		if r := block.PreferredReadReplica; r >= 0 && r != l.id && len(block.RecordsSet) == 0 && raw == nil && l.prefer(p, r) {
			continue
		}
		if raw != nil {
			l.f.stats.ownShares.Add(1)
		}
		out, err := parseBlock(p.topic, p.partition, block, raw, rp.offset, committed)
		if err != nil {
			// A batch that cannot be read: reported, and fetched again
			// after a pause (never skipped).
			p.setReport(fmt.Errorf("%w: broker %d: %w", ErrFetch, l.id, err))
			l.f.log.Error("record batch cannot be read; fetching it again", "broker", l.id, "error", err)
			l.release(p)
			l.f.reroute(true, true, p)
			continue
		}
		bound := block.HighWaterMarkOffset
		if committed {
			bound = block.LastStableOffset
		}
		p.mu.Lock()
		if p.closed || p.seq != rp.seq || p.loop != l {
			p.mu.Unlock()
			continue // sought, closed or moved since the request
		}
		var tooLarge, gap bool
		switch {
		case out.recs != nil:
			p.buf = append(p.buf, out.recs)
			p.offset = out.next
			p.lastEpoch = out.epoch
			p.size = l.f.cfg.PartitionMaxBytes
			p.starved = 0
		case out.partial:
			tooLarge = !p.grow(l.f.cfg.PartitionMaxBytesLimit)
		case out.next > rp.offset:
			p.offset = out.next // only control or aborted batches
			p.lastEpoch = out.epoch
			p.starved = 0
			gap = p.skipTo(block)
		case throttled:
		case bound > rp.offset && alone && p.starved > 0:
			// Asked alone and still nothing below the bound: the batch
			// there holds no record (sarama drops empty batches when
			// decoding, and with them their end and epoch). Step over it.
			p.offset++
			p.lastEpoch = -1
			p.starved = 0
			gap = p.skipTo(block)
		case bound > rp.offset:
			p.starved++
		default:
			p.starved = 0
			quiet = wasQuiet
		}
		p.mu.Unlock()
		if tooLarge {
			l.stop(rp, fmt.Errorf("%w: %s/%d at offset %d: limit %d bytes", ErrMessageTooLarge,
				p.topic, p.partition, rp.offset, l.f.cfg.PartitionMaxBytesLimit))
		} else if out.recs != nil || gap {
			if out.recs != nil {
				l.records.Add(uint64(out.recs.Len()))
			}
			p.signal()
		}
	}
	if len(back) > 0 {
		l.release(back...)
		// Not this replica again for a moment, so that a replica behind
		// the leader does not make the partition bounce between the two.
		until := time.Now().Add(4 * l.f.cfg.RetryBackoff)
		for _, p := range back {
			p.mu.Lock()
			p.replica, p.avoid, p.avoidUntil = -1, l.id, until
			p.mu.Unlock()
		}
		l.f.reroute(true, false, back...)
	}
	if len(moved) > 0 {
		l.f.log.Info("partitions moved away from broker; routing them again", "broker", l.id, "partitions", len(moved), "error", movedErr)
		l.release(moved...)
		// After RetryBackoff: the metadata may still name this broker for
		// a while, and an immediate reroute would bounce between the two.
		l.f.reroute(true, true, moved...)
	}
	return quiet
}

// prefer moves p to replica r, which its leader named as the one to fetch
// from, unless r's broker failed lately. It reports whether p moved.
func (l *brokerLoop) prefer(p *Partition, r int32) bool {
	p.mu.Lock()
	avoided := p.avoid == r && time.Now().Before(p.avoidUntil)
	p.mu.Unlock()
	if avoided {
		return false
	}
	l.f.log.Debug("fetching from the replica the leader named", "leader", l.id, "topic", p.topic, "partition", p.partition, "replica", r)
	l.release(p)
	l.f.routeTo(p, r)
	return true
}

// truncated stops p: the broker says the log it fetched from diverged
// below the fetch position (a truncation; Fetch v12 with the last fetched
// epoch).
func (l *brokerLoop) truncated(rp *reqPart, d *sarama.FetchResponseDivergingEpoch) {
	p := rp.p
	err := &TruncationError{Topic: p.topic, Partition: p.partition, Offset: rp.offset,
		EndOffset: min(d.EndOffset, rp.offset), Epoch: rp.lastEpoch, LeaderEpoch: d.Epoch}
	l.f.stats.truncations.Add(1)
	l.f.log.Warn("log truncated below the fetch position; the partition stops until it is given an offset",
		"topic", p.topic, "partition", p.partition, "broker", l.id,
		"offset", rp.offset, "end_offset", err.EndOffset, "epoch", rp.lastEpoch, "leader_epoch", d.Epoch)
	l.stop(rp, err)
}

// skipTo hands the move of p.offset past offsets without records over to
// the consumer, so that it can commit past them (a transaction's commit
// marker at the end of the log would otherwise stay a lag of 1 for ever):
// the newest buffered Records' NextOffset moves there, or, with nothing
// buffered, an empty Records is buffered. It reports whether an empty
// Records was buffered. Under p.mu.
func (p *Partition) skipTo(block *sarama.FetchResponseBlock) bool {
	if n := len(p.buf); n > 0 {
		p.buf[n-1].NextOffset = p.offset
		return false
	}
	p.buf = append(p.buf, &Records{Topic: p.topic, Partition: p.partition,
		HighWaterMark: block.HighWaterMarkOffset, LastStableOffset: block.LastStableOffset,
		LogStartOffset: block.LogStartOffset, NextOffset: p.offset})
	return true
}

// grow raises the partition's fetch size for a batch that did not fit
// (doubling, within limit when set). It returns false when it cannot.
// Under p.mu.
func (p *Partition) grow(limit int32) bool {
	if limit > 0 && p.size >= limit {
		return false
	}
	n := int64(p.size) * 2
	if limit > 0 {
		n = min(n, int64(limit))
	}
	p.size = int32(min(n, int64(1<<31-1)))
	return true
}

// stop stops p with err until SetOffset, unless it was sought since rp.
func (l *brokerLoop) stop(rp *reqPart, err error) {
	p := rp.p
	p.mu.Lock()
	if p.closed || p.seq != rp.seq {
		p.mu.Unlock()
		return
	}
	p.stop = err
	p.mu.Unlock()
	p.signal()
}

// leaderMoved reports the errors after which the partition is routed
// again, after RetryBackoff and a metadata refresh.
func leaderMoved(err sarama.KError) bool {
	switch err {
	case sarama.ErrNotLeaderForPartition, sarama.ErrUnknownTopicOrPartition,
		sarama.ErrLeaderNotAvailable, sarama.ErrReplicaNotAvailable,
		sarama.ErrFencedLeaderEpoch, sarama.ErrUnknownLeaderEpoch,
		sarama.ErrKafkaStorageError, sarama.ErrNotCoordinatorForConsumer,
		errUnknownTopicID, errInconsistentTopicID:
		return true
	}
	return false
}

// fail handles a failed request (the connection, most likely): the
// connection is dropped, every partition of the loop hears of it and goes
// back to the router, which finds their leaders again after RetryBackoff.
func (l *brokerLoop) fail(err error) {
	l.dropConn()
	l.sess.reset(true) // a new connection: the next request is full
	select {
	case <-l.f.t.Dying():
		return
	default:
	}
	l.mu.Lock()
	ps := l.parts
	l.parts = nil
	l.mu.Unlock()
	var live []*Partition
	for _, p := range ps {
		p.mu.Lock()
		mine := p.loop == l && !p.closed
		if mine {
			p.loop = nil
			if p.replica == l.id {
				// Not this replica again for a while, whatever the
				// leader says.
				p.replica, p.avoid = -1, l.id
				p.avoidUntil = time.Now().Add(l.f.cfg.ReplicaRecheck)
			}
		}
		p.mu.Unlock()
		if mine {
			live = append(live, p)
			p.setReport(fmt.Errorf("%w: %s/%d: broker %d: %w", ErrFetch, p.topic, p.partition, l.id, err))
		}
	}
	l.f.log.Warn("fetch from broker failed; routing its partitions again", "broker", l.id, "addr", l.addr, "partitions", len(live), "error", err)
	l.f.reroute(true, true, live...)
}

// connect returns the loop's connection, opening it on first use (with the
// client's config: TLS, SASL, version, client id).
func (l *brokerLoop) connect() (*sarama.Broker, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if l.conn != nil {
		return l.conn, nil
	}
	cfg := *l.f.client.Config()
	inner := cfg.Net.Proxy.Dialer
	if !cfg.Net.Proxy.Enable || inner == nil {
		inner = &net.Dialer{Timeout: cfg.Net.DialTimeout, KeepAlive: cfg.Net.KeepAlive, LocalAddr: cfg.Net.LocalAddr}
	}
	cfg.Net.Proxy.Enable = true
	var tlsCfg *tls.Config
	if cfg.Net.TLS.Enable {
		// TLS below the tap, which must see plain bytes.
		tlsCfg = serverNameTLS(l.addr, cfg.Net.TLS.Config)
		cfg.Net.TLS.Enable = false
	}
	cfg.Net.Proxy.Dialer = dialFunc(func(network, addr string) (net.Conn, error) {
		c, err := inner.Dial(network, addr)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = c.Close()
			return nil, ErrClosed
		}
		l.raw = c
		l.mu.Unlock()
		if tlsCfg != nil {
			// The handshake here, bounded as a dial is: sarama, which
			// does not know of this TLS, bounds no read of it.
			tc := tls.Client(c, tlsCfg)
			ctx, cancel := context.WithTimeout(context.Background(), cfg.Net.DialTimeout)
			err := tc.HandshakeContext(ctx)
			cancel()
			if err != nil {
				_ = c.Close()
				return nil, err
			}
			c = tc
		}
		t := newTap(c, cfg.Net.ReadTimeout, !l.f.cfg.SaramaDecodes)
		l.mu.Lock()
		l.tap = t
		t.useIDs(l.nextIDs)
		l.mu.Unlock()
		return t, nil
	})
	b := sarama.NewBroker(l.addr)
	if err := b.Open(&cfg); err != nil {
		return nil, err
	}
	l.conn = b
	return b, nil
}

// taken returns the records the connection's tap took out of the last
// fetch response (nil without a tap).
func (l *brokerLoop) taken() []rawRecords {
	l.mu.Lock()
	t := l.tap
	l.mu.Unlock()
	if t == nil {
		return nil
	}
	return t.take()
}

// useIDs has the connection's tap write the next fetch request with the
// topic ids of ids (Fetch v13); nil: as built (by name). sarama dials in
// the background (Broker.Open does not wait): a tap made after this call
// takes ids from l.nextIDs as it is made.
func (l *brokerLoop) useIDs(ids *topicIDs) {
	l.mu.Lock()
	l.nextIDs = ids
	if l.tap != nil {
		l.tap.useIDs(ids)
	}
	l.mu.Unlock()
}

// rawIndex returns a lookup of raws by partition.
func rawIndex(raws []rawRecords) func(topic string, partition int32) []byte {
	switch {
	case len(raws) == 0:
		return func(string, int32) []byte { return nil }
	case len(raws) <= 8:
		return func(topic string, partition int32) []byte {
			for i := range raws {
				if raws[i].partition == partition && raws[i].topic == topic {
					return raws[i].raw
				}
			}
			return nil
		}
	}
	m := make(map[topicPartition][]byte, len(raws))
	for _, r := range raws {
		m[topicPartition{r.topic, r.partition}] = r.raw
	}
	return func(topic string, partition int32) []byte { return m[topicPartition{topic, partition}] }
}

// serverNameTLS is sarama's TLS client config for a broker at addr: the
// configured one (TLS 1.2 at least when none) with the broker's host as
// the server name when it names none.
func serverNameTLS(addr string, c *tls.Config) *tls.Config {
	if c == nil {
		c = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		c = c.Clone()
		c.ServerName = host
	}
	return c
}

// dialFunc is a dialer (sarama's Net.Proxy.Dialer) that keeps the socket,
// so that Close can cut a long poll short: sarama's Broker.Close waits for
// the request in flight.
type dialFunc func(network, addr string) (net.Conn, error)

func (d dialFunc) Dial(network, addr string) (net.Conn, error) { return d(network, addr) }

// dropConn closes the loop's connection (a new one is opened at the next
// request).
func (l *brokerLoop) dropConn() {
	l.mu.Lock()
	conn := l.conn
	l.conn, l.raw, l.tap = nil, nil, nil
	l.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

// closeConn is the fetcher's Close: no connection is opened any more and
// the socket of a request in flight is closed, which ends the request.
func (l *brokerLoop) closeConn() {
	l.mu.Lock()
	l.closed = true
	raw := l.raw
	l.mu.Unlock()
	if raw != nil {
		_ = raw.Close()
	}
}

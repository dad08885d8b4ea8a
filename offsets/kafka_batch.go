package offsets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/zkgroup/zkgroup/internal/shrink"
)

// kopKind is what a queued operation does.
type kopKind uint8

const (
	kopCommit kopKind = iota // write, never below the floor
	kopReset                 // write, also below the floor; sets the floor
	kopFetch                 // read the committed offset
)

// String returns the operation's name in errors: "commit", "reset", "fetch".
func (k kopKind) String() string {
	switch k {
	case kopCommit:
		return "commit"
	case kopReset:
		return "reset"
	default:
		return "fetch"
	}
}

// States of a queued operation.
const (
	kopQueued    int32 = iota // waiting for a round
	kopTaken                  // in a round (or failed by Close): done will be closed
	kopAbandoned              // its caller stopped waiting before a round took it
)

// kop is one caller's operation: its entries go into the next round
// together. Until done is closed, items belong to the batcher (or to Close,
// which fails queued operations); afterwards to the caller.
type kop struct {
	ctx    context.Context
	kind   kopKind
	verify bool // read written entries back
	single bool // a Commit or Reset (counted by a kafkaHold)
	items  []kitem
	state  atomic.Int32
	done   chan struct{}
}

// kitem is one partition of an operation, with its result.
type kitem struct {
	tp     TopicPartition
	next   int64 // to write; for a fetch, what the coordinator holds
	ok     bool  // fetch: something is committed
	err    error
	token  int64  // the write's fencing token; for a fetch, the one the coordinator holds (0: none)
	part   *kpart // written entries: the managed partition
	verify bool   // read back after writing
	fault  fault  // how the last write failed
}

func newOp(ctx context.Context, kind kopKind, verify bool, n int) *kop {
	o := &kop{ctx: ctx, kind: kind, verify: verify, items: make([]kitem, n), done: make(chan struct{})}
	for i := range o.items {
		o.items[i].verify = verify
	}
	return o
}

// fail ends the operation with err for every entry.
func (o *kop) fail(err error) {
	for i := range o.items {
		o.items[i].err = err
	}
	close(o.done)
}

// submit queues o and waits until its round has finished, or ctx ends. An
// operation abandoned before a round took it is dropped; one abandoned
// during its round is left to it (the round ends by its own deadline).
func (s *KafkaStore) submit(ctx context.Context, o *kop) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.queue = append(s.queue, o)
	heldBack := false
	if o.single {
		s.countLocked(1)
		// Held by a hold still in force, o cannot go before the hold
		// ends, which wakes the batcher: waking it now would only have it
		// scan the queue again, once per call (a Close's thousands of
		// final commits made that quadratic).
		heldBack = s.hold != nil
	}
	s.mu.Unlock()
	switch {
	case o.kind == kopFetch:
		s.pokeReader()
	case !heldBack:
		s.poke()
	}
	select {
	case <-o.done:
		return nil
	case <-ctx.Done():
	}
	if o.state.CompareAndSwap(kopQueued, kopAbandoned) {
		return ctx.Err()
	}
	select {
	case <-o.done: // finished just in time
		return nil
	default:
	}
	// A write abandoned unanswered may still land: worth a warning. A
	// read is only a read: its caller gets ctx's error and says what it
	// means (a prefetch bounded by the join settle gives up on a
	// coordinator still loading, a normal condition on a first start; a
	// partition's start warns and retries).
	level := slog.LevelWarn
	if o.kind == kopFetch {
		level = slog.LevelDebug
	}
	tp := o.items[0].tp
	s.log.Log(context.Background(), level, o.kind.String()+" abandoned while the coordinator has not answered",
		"topic", tp.Topic, "partition", tp.Partition, "partitions", len(o.items), "error", ctx.Err())
	return ctx.Err()
}

// loop is the batcher: it runs a round whenever a write is queued.
func (s *KafkaStore) loop() error {
	defer func() {
		for _, l := range s.links {
			l.close()
		}
	}()
	return s.serve(s.wake, s.take, s.round, s.endRound)
}

// serve runs, each time wake fires until the store dies, a round (run,
// then end) of what take moves out of the queue, if anything.
func (s *KafkaStore) serve(wake <-chan struct{}, take func() []*kop, run func([]*kop), end func()) error {
	for {
		select {
		case <-s.t.Dying():
			return nil
		case <-wake:
		}
		if ops := take(); len(ops) > 0 {
			run(ops)
			end()
		}
	}
}

// waiting reports whether a caller of ops still waits for them: a round's
// retries end once none does.
func waiting(ops []*kop) func() bool {
	return func() bool {
		for _, o := range ops {
			if o.ctx.Err() == nil {
				return true
			}
		}
		return false
	}
}

// take moves the writes queued into a new round: every one not
// abandoned, except writes of a partition another operation of the round
// writes or the reader's round reads, which stay queued for the next
// round, and, while a hold is in force, its Commit and Reset calls and
// the later writes of their partitions (so that a partition's writes
// never overtake one another). It marks the written partitions as
// sending and managed. Fetches are the reader's (takeFetches).
func (s *KafkaStore) take() []*kop {
	s.takes.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	held := s.hold != nil // a hold's Release or last expected call wakes the loop
	var heldParts map[TopicPartition]struct{}
	var taken []*kop
	rest := s.queue[:0]
	for _, o := range s.queue {
		if o.state.Load() == kopAbandoned {
			continue
		}
		if o.kind == kopFetch {
			rest = append(rest, o)
			continue
		}
		if held && (o.single || writesAny(o, heldParts)) {
			if heldParts == nil {
				heldParts = map[TopicPartition]struct{}{}
			}
			for i := range o.items {
				heldParts[o.items[i].tp] = struct{}{}
			}
			rest = append(rest, o)
			continue
		}
		if writesAny(o, s.sending) || writesAny(o, s.reading) {
			rest = append(rest, o)
			continue
		}
		if !o.state.CompareAndSwap(kopQueued, kopTaken) {
			continue // abandoned meanwhile
		}
		for i := range o.items {
			it := &o.items[i]
			p := s.parts[it.tp]
			if p == nil {
				p = &kpart{floor: -1}
				s.parts[it.tp] = p
				s.partsPeak.Note(len(s.parts))
			}
			it.part = p
			s.sending[it.tp] = struct{}{}
		}
		s.sendPeak.Note(len(s.sending))
		taken = append(taken, o)
	}
	clear(s.queue[len(rest):])
	s.queue = rest
	if len(taken) > 0 {
		s.roundDone = make(chan struct{})
	}
	return taken
}

// writesAny reports whether o has an entry of a partition in parts.
func writesAny(o *kop, parts map[TopicPartition]struct{}) bool {
	for i := range o.items {
		if _, ok := parts[o.items[i].tp]; ok {
			return true
		}
	}
	return false
}

// endRound clears the round's partitions, tells Release, and wakes the
// batcher and the reader again if operations were deferred or queued
// meanwhile.
func (s *KafkaStore) endRound() {
	s.mu.Lock()
	clear(s.sending)
	s.sending = shrink.Map(s.sending, &s.sendPeak)
	close(s.roundDone)
	s.roundDone = nil
	more := len(s.queue) > 0
	s.mu.Unlock()
	if more {
		s.pokeBoth()
	}
}

// fetchLoop is the reader: it answers the queued Fetch calls, all of them
// in one OffsetFetch per round, beside the batcher's rounds of writes, so
// that a partition's start does not wait for a round of commits of the
// others (a write round and its read-back take two round trips, and more
// while the coordinator is busy). A partition is never read while the
// batcher writes it, nor written while read: a Fetch of a partition in
// the write round under way waits for its end, which sees every write
// that returned before it.
func (s *KafkaStore) fetchLoop() error {
	return s.serve(s.fetchWake, s.takeFetches, s.fetchRound, s.endFetchRound)
}

// takeFetches moves the queued Fetch calls not abandoned into the
// reader's round, except those reading a partition the write round under
// way writes, and marks their partitions as reading.
func (s *KafkaStore) takeFetches() []*kop {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	var taken []*kop
	rest := s.queue[:0]
	for _, o := range s.queue {
		if o.state.Load() == kopAbandoned {
			continue
		}
		if o.kind != kopFetch || writesAny(o, s.sending) {
			rest = append(rest, o)
			continue
		}
		if !o.state.CompareAndSwap(kopQueued, kopTaken) {
			continue // abandoned meanwhile
		}
		for i := range o.items {
			s.reading[o.items[i].tp] = struct{}{}
		}
		s.readPeak.Note(len(s.reading))
		taken = append(taken, o)
	}
	clear(s.queue[len(rest):])
	s.queue = rest
	return taken
}

// endFetchRound clears the partitions read and wakes the batcher for
// writes deferred meanwhile, and the reader for what was queued.
func (s *KafkaStore) endFetchRound() {
	s.mu.Lock()
	clear(s.reading)
	s.reading = shrink.Map(s.reading, &s.readPeak)
	more := len(s.queue) > 0
	s.mu.Unlock()
	if more {
		s.pokeBoth()
	}
}

// fetchRound answers ops, Fetch calls, with one OffsetFetch per attempt.
func (s *KafkaStore) fetchRound(ops []*kop) {
	s.stats.rounds.Add(1)
	ctx, cancel := s.roundContext(ops)
	defer cancel()
	live := waiting(ops)
	var items []*kitem
	for _, o := range ops {
		for i := range o.items {
			items = append(items, &o.items[i])
		}
	}
	s.fetchItems(ctx, live, items)
	for _, o := range ops {
		close(o.done)
	}
}

// round runs one round for ops, writes: one commit of every written
// entry (not below its floor) and the read-back of those to verify or
// that failed; then it hands the results over.
func (s *KafkaStore) round(ops []*kop) {
	s.stats.rounds.Add(1)
	ctx, cancel := s.roundContext(ops)
	defer cancel()
	live := waiting(ops)
	var writes []*kitem
	var writeBy time.Time // the earliest deadline of the round's writes: none is sent after it
	for _, o := range ops {
		if d, ok := o.ctx.Deadline(); ok && (writeBy.IsZero() || d.Before(writeBy)) {
			writeBy = d
		}
		for i := range o.items {
			it := &o.items[i]
			switch {
			case o.kind == kopCommit && it.next < it.part.floor:
				s.log.Debug("commit below committed offset skipped", "topic", it.tp.Topic, "partition", it.tp.Partition, "offset", it.next, "committed", it.part.floor)
			default:
				writes = append(writes, it)
			}
		}
	}
	if writeBy.IsZero() {
		writeBy, _ = ctx.Deadline()
	}
	s.commitItems(ctx, live, writes, writeBy)
	var check []*kitem // to verify, or failed but may have landed
	for _, it := range writes {
		if it.err == nil && it.verify || it.err != nil && it.fault.unsure() {
			check = append(check, it)
		}
	}
	if len(check) > 0 && ctx.Err() == nil {
		s.verify(ctx, live, check, writeBy)
	}
	for _, o := range ops {
		for i := range o.items {
			it := &o.items[i]
			if it.err == nil && (o.kind == kopReset || it.next > it.part.floor) {
				it.part.floor = it.next
			}
		}
	}
	for _, o := range ops {
		close(o.done)
	}
}

// roundContext ends when the last caller of the round stops waiting (at
// most CommitTimeout from now) or the store closes.
func (s *KafkaStore) roundContext(ops []*kop) (context.Context, context.CancelFunc) {
	limit := time.Now().Add(s.cfg.CommitTimeout)
	var last time.Time
	for _, o := range ops {
		d, ok := o.ctx.Deadline()
		if !ok {
			last = limit
			break
		}
		if d.After(last) {
			last = d
		}
	}
	if last.After(limit) {
		last = limit
	}
	return context.WithDeadline(s.base, last)
}

// errNobodyWaits ends the retries of a round whose callers all gave up.
var errNobodyWaits = errors.New("no caller waits any more")

// verify reads back the offsets of items (written, or failed to write
// without a definite answer) in one OffsetFetch. An item whose write
// failed but that the coordinator holds succeeded after all. Items the coordinator holds another offset
// for are written once more and read back again; if the coordinator then
// still holds another, they fail.
func (s *KafkaStore) verify(ctx context.Context, live func() bool, items []*kitem, writeBy time.Time) {
	again := s.readBack(ctx, live, items)
	if len(again) == 0 {
		return
	}
	if ctx.Err() != nil || !time.Now().Before(writeBy) {
		return // readBack set their errors; nothing may be written any more
	}
	s.stats.recommitted.Add(uint64(len(again)))
	for _, it := range again {
		s.log.Warn("the coordinator holds another offset than written; writing it again",
			"topic", it.tp.Topic, "partition", it.tp.Partition, "offset", it.next, "error", it.err)
		it.err = nil
	}
	s.commitItems(ctx, live, again, writeBy)
	if ctx.Err() == nil {
		s.readBack(ctx, live, again)
	}
}

// readBack fetches items' offsets and compares: equal clears an item's
// error, a failed read or another offset sets (or adds to) it. It returns
// the items the coordinator holds another offset for.
func (s *KafkaStore) readBack(ctx context.Context, live func() bool, items []*kitem) []*kitem {
	tps := make([]TopicPartition, len(items))
	for i, it := range items {
		tps[i] = it.tp
	}
	got := s.fetchOffsets(ctx, live, tps)
	var differ []*kitem
	for i, it := range items {
		g := got[i]
		switch {
		case g.err != nil:
			it.err = errors.Join(it.err, fmt.Errorf("verify: %w", g.err))
		case g.ok && g.next == it.next:
			if it.err != nil {
				s.log.Warn("commit reported an error but the coordinator has the offset",
					"topic", it.tp.Topic, "partition", it.tp.Partition, "offset", it.next, "error", it.err)
				it.err = nil
			}
			s.stats.verified.Add(1)
		case !g.ok:
			it.err = errors.Join(it.err, errors.New("verify: the coordinator has no committed offset"))
			differ = append(differ, it)
		default:
			it.err = errors.Join(it.err, fmt.Errorf("verify: the coordinator has offset %d", g.next))
			differ = append(differ, it)
		}
	}
	return differ
}

// fetchItems answers the round's Fetch entries with one OffsetFetch per
// attempt for their partitions.
func (s *KafkaStore) fetchItems(ctx context.Context, live func() bool, items []*kitem) {
	index := make(map[TopicPartition]int, len(items))
	var tps []TopicPartition
	for _, it := range items {
		if _, ok := index[it.tp]; !ok {
			index[it.tp] = len(tps)
			tps = append(tps, it.tp)
		}
	}
	got := s.fetchOffsets(ctx, live, tps)
	for _, it := range items {
		g := got[index[it.tp]]
		it.next, it.ok, it.err, it.token = g.next, g.ok, g.err, g.token
	}
}

package pipeline

import (
	"context"
	"log/slog"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
)

// batcher is one partition's worker for a BatchHandler: it takes what the
// consumer hands over (Poll), cuts it into batches within the limits,
// waiting up to Linger for more when a batch is under them, hands each to
// the handler and acks what the handler delivered. Used by its worker's
// goroutine only.
type batcher struct {
	p   *Pipeline
	s   Stream
	h   BatchHandler
	lim sink.BatchLimits
	log *slog.Logger

	queue  []*manager.Batch // taken, not yet all in a sink batch
	next   int              // queue[0].Messages[next] is the first not in one
	closed bool             // the stream ended: Poll returns no more

	msgs  []*manager.Message // the sink batch (reused)
	spans []span             // where msgs came from
	bytes int                // sink.MessageSize of msgs, summed
}

// span is a run of a batch's messages in the sink batch: b.Messages[from:to].
type span struct {
	b        *manager.Batch
	from, to int
}

func newBatcher(p *Pipeline, s Stream, h BatchHandler, lim sink.BatchLimits, log *slog.Logger) *batcher {
	return &batcher{p: p, s: s, h: h, lim: lim, log: log}
}

// run delivers batches until the stream ends, the handler fails for good
// or an ack says the ownership ended. The stream, not ctx, ends the loop:
// once ctx ends, HandleBatch fails and the worker stops, abandoning what
// it took and did not deliver.
func (w *batcher) run(ctx context.Context) {
	for w.fill() {
		n, err := w.h.HandleBatch(ctx, w.msgs)
		stale := w.ack(n)
		if err != nil {
			w.log.Error("batch not delivered; not acked from the failed message on, partition worker stops",
				"offset", w.msgs[n].Offset, "last_offset", w.msgs[len(w.msgs)-1].Offset, "error", err)
			// The daemon stops: its drain need not wait for these acks.
			// Nothing from this offset on is committed.
			w.abandon(w.msgs[n:])
			w.abandonQueue()
			w.p.failed(ctx, err)
			return
		}
		if stale {
			w.log.Info("the partition's ownership ended while its batch was delivered; the rest goes to the next owner")
			w.abandonQueue()
			w.dropRest()
			return
		}
	}
}

// full reports whether m cannot join the sink batch.
func (w *batcher) full(m *manager.Message) bool {
	if len(w.msgs) == 0 {
		return false // a message alone may exceed MaxBytes
	}
	return (w.lim.MaxMessages > 0 && len(w.msgs) >= w.lim.MaxMessages) ||
		(w.lim.MaxBytes > 0 && w.bytes+sink.MessageSize(m) > w.lim.MaxBytes)
}

// take moves queued messages into the sink batch until it is full or the
// queue empty, and reports whether it is full.
func (w *batcher) take() bool {
	for len(w.queue) > 0 {
		b := w.queue[0]
		from := w.next
		full := false
		for ; w.next < len(b.Messages); w.next++ {
			m := b.Messages[w.next]
			if full = w.full(m); full {
				break
			}
			w.msgs = append(w.msgs, m)
			w.bytes += sink.MessageSize(m)
		}
		if w.next > from {
			w.spans = append(w.spans, span{b, from, w.next})
		}
		if w.next == len(b.Messages) {
			w.queue[0] = nil
			w.queue = w.queue[1:]
			w.next = 0
		}
		if full {
			return true
		}
	}
	return false
}

// poll takes the stream's next batch into the queue, waiting until one
// comes or, with a deadline (lingering), until it passes or the pipeline
// hurries. It reports false when none came.
func (w *batcher) poll(deadline time.Time) bool {
	ctx := context.Background()
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(w.p.hurried, deadline)
		defer cancel()
	}
	b, err := w.s.Poll(ctx)
	switch {
	case err == nil && b != nil && len(b.Messages) > 0:
		w.queue = append(w.queue, b)
		return true
	case err == nil, ctx.Err() != nil:
		return false
	}
	w.closed = true
	return false
}

// fill makes the next sink batch: what is queued, then what the stream
// hands over, until the batch is full, the queue is empty and Linger has
// passed since the batch began (at once with no Linger), or the stream
// ended, or the pipeline hurries. It reports false when there is nothing
// to deliver any more.
func (w *batcher) fill() bool {
	clear(w.msgs)
	w.msgs, w.spans, w.bytes = w.msgs[:0], w.spans[:0], 0
	var lingerEnd time.Time
	for {
		if w.take() {
			return true
		}
		switch {
		case w.closed:
			return len(w.msgs) > 0
		case len(w.msgs) == 0:
			w.poll(time.Time{})
		case w.lim.Linger <= 0, w.p.hurried.Err() != nil:
			return true
		default:
			if lingerEnd.IsZero() {
				lingerEnd = time.Now().Add(w.lim.Linger)
			}
			if !w.poll(lingerEnd) && !w.closed {
				return true
			}
		}
	}
}

// ack acks the sink batch's first n messages, span by span, and reports
// whether an ack said the ownership ended (AckStale).
func (w *batcher) ack(n int) (stale bool) {
	for _, sp := range w.spans {
		if n <= 0 {
			break
		}
		k := min(n, sp.to-sp.from)
		if w.p.cfg.AckUpTo(sp.b, sp.b.Messages[sp.from+k-1].Offset) == manager.AckStale {
			stale = true
		}
		n -= k
	}
	return stale
}

func (w *batcher) abandon(msgs []*manager.Message) {
	for _, m := range msgs {
		w.p.cfg.Abandon(m)
	}
}

// abandonQueue abandons what was taken and is in no sink batch.
func (w *batcher) abandonQueue() {
	for i, b := range w.queue {
		from := 0
		if i == 0 {
			from = w.next
		}
		w.abandon(b.Messages[from:])
	}
	clear(w.queue)
	w.queue, w.next = w.queue[:0], 0
}

// dropRest abandons whatever the stream still hands over, until it ends:
// its ownership ended, so nothing of it may be delivered any more.
func (w *batcher) dropRest() {
	for !w.closed {
		if w.poll(time.Time{}) {
			w.abandonQueue()
		}
	}
}

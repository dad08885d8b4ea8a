package pipeline

import (
	"context"
	"github.com/zkgroup/zkgroup/manager"
	"iter"
	"log/slog"
	"sync"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
)

// Stream is one owned partition's message stream; *manager.PartitionStream
// satisfies it. A worker uses Each (a plain sink) or Poll (a batch sink),
// never both: Each yields the partition's messages one by one, Poll what
// the consumer hands over in one go; both end when the stream ends (the
// partition was revoked or lost, or the consumer stopped), Poll with an
// error.
type Stream interface {
	Topic() string
	Partition() int32
	Each(ctx context.Context) iter.Seq2[*manager.Message, error]
	Poll(ctx context.Context) (*manager.Batch, error)
}

// Handler decides a message's fate; *sink.Handler satisfies it. A nil
// error means the message may be acked.
type Handler interface {
	Handle(ctx context.Context, m *manager.Message) (sink.Outcome, error)
}

// BatchHandler is a Handler that may take a batch; *sink.Handler satisfies
// it. When BatchLimits reports true the workers hand it batches within
// those limits (HandleBatch), else messages one by one (Handle).
type BatchHandler interface {
	Handler
	// HandleBatch handles msgs (one partition's, in offset order) and
	// returns how many, from the first, may be acked; with an error,
	// msgs[n] failed for good and none from it may be acked (see
	// sink.Handler.HandleBatch).
	HandleBatch(ctx context.Context, msgs []*manager.Message) (int, error)
	// BatchLimits returns the limits of one batch, and whether the
	// handler takes batches at all. Constant; does not block.
	BatchLimits() (sink.BatchLimits, bool)
}

// Config configures a Pipeline.
type Config struct {
	// Handler handles the messages; a BatchHandler whose BatchLimits
	// reports true is handed batches.
	Handler Handler
	// Ack acks a message handled one by one (the consumer's Ack).
	Ack func(*manager.Message)
	// AckUpTo acks the messages of b up to offset, when they were handled
	// in a batch; nil calls b.AckUpTo. Its result AckStale (the ownership
	// ended: the drain was cut, or the partition lost) stops the worker
	// delivering: the rest goes to the next owner.
	AckUpTo func(b *manager.Batch, offset int64) manager.AckResult
	// Abandon abandons a message that will not be acked (see
	// manager.Message.Abandon); nil calls m.Abandon.
	Abandon func(*manager.Message)
	// Fatal is called once, with the first handler error: the message was
	// not acked and the daemon must stop. Its worker stops taking messages.
	Fatal  func(error)
	Logger *slog.Logger
}

type key struct {
	topic     string
	partition int32
}

// Pipeline dispatches streams to workers. Safe for concurrent use.
type Pipeline struct {
	cfg   Config
	log   *slog.Logger
	wg    sync.WaitGroup
	mu    sync.Mutex
	last  map[key]chan struct{} // closed when that partition's latest worker ended
	fatal sync.Once
	// hurried ends (Hurry) once no worker may linger any more.
	hurried context.Context
	hurry   context.CancelFunc
}

// New returns a pipeline. Does not block.
func New(cfg Config) *Pipeline {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.AckUpTo == nil {
		cfg.AckUpTo = (*manager.Batch).AckUpTo
	}
	if cfg.Abandon == nil {
		cfg.Abandon = (*manager.Message).Abandon
	}
	hurried, hurry := context.WithCancel(context.Background())
	return &Pipeline{cfg: cfg, log: log, last: map[key]chan struct{}{}, hurried: hurried, hurry: hurry}
}

// Start starts a worker for s. It returns at once; the worker first waits
// for the previous worker of the same partition, then processes s until
// its channel is closed, ctx ends or the handler fails for good.
func (p *Pipeline) Start(ctx context.Context, s Stream) {
	k := key{s.Topic(), s.Partition()}
	done := make(chan struct{})
	p.mu.Lock()
	prev := p.last[k]
	p.last[k] = done
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer func() {
			p.mu.Lock()
			if p.last[k] == done {
				delete(p.last, k)
			}
			p.mu.Unlock()
			close(done)
		}()
		if prev != nil {
			<-prev
		}
		p.work(ctx, s)
	}()
}

func (p *Pipeline) work(ctx context.Context, s Stream) {
	log := p.log.With("topic", s.Topic(), "partition", s.Partition())
	log.Debug("partition worker started")
	if bh, ok := p.cfg.Handler.(BatchHandler); ok {
		if lim, ok := bh.BatchLimits(); ok {
			newBatcher(p, s, bh, lim, log).run(ctx)
			log.Debug("partition worker ended")
			return
		}
	}
	// The stream, not ctx, ends the loop: once ctx ends, Handle fails and
	// the worker stops as below, abandoning that message.
	for m, err := range s.Each(context.Background()) {
		if err != nil {
			log.Error("partition stream failed", "error", err)
			return
		}
		if m == nil {
			continue
		}
		if _, err := p.cfg.Handler.Handle(ctx, m); err != nil {
			log.Error("message not delivered; not acked, partition worker stops", "offset", m.Offset, "error", err)
			// The daemon stops: its drain need not wait for this ack.
			// Nothing from this offset on is committed.
			p.cfg.Abandon(m)
			p.failed(ctx, err)
			return
		}
		p.cfg.Ack(m)
	}
	log.Debug("partition worker ended")
}

// failed reports a handler's error to Fatal, once per pipeline, unless ctx
// ended (the daemon is stopping already).
func (p *Pipeline) failed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	p.fatal.Do(func() {
		if p.cfg.Fatal != nil {
			p.cfg.Fatal(err)
		}
	})
}

// Run starts a worker for every stream from streams until it ends, then
// waits for every worker. Blocks until then. It returns the error streams
// yielded, if any (it starts no more workers then).
func Run[S Stream](ctx context.Context, p *Pipeline, streams iter.Seq2[S, error]) error {
	var failed error
	for s, err := range streams {
		if err != nil {
			failed = err
			break
		}
		p.Start(ctx, s)
	}
	p.Wait()
	return failed
}

// Hurry makes every worker hand its partial batch over at once and linger
// no more (BatchLimits.Linger): call it when the daemon begins to stop, so
// that a drain does not wait for a linger. A drain on revoke is not told:
// it may wait up to one linger longer. Idempotent; does not block.
func (p *Pipeline) Hurry() { p.hurry() }

// Wait blocks until every started worker has ended.
func (p *Pipeline) Wait() { p.wg.Wait() }

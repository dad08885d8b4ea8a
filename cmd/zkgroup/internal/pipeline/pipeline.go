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
// satisfies it. Each yields the partition's messages one by one until the
// stream ends (the partition was revoked or lost, or the consumer
// stopped).
type Stream interface {
	Topic() string
	Partition() int32
	Each(ctx context.Context) iter.Seq2[*manager.Message, error]
}

// Handler decides a message's fate; *sink.Handler satisfies it. A nil
// error means the message may be acked.
type Handler interface {
	Handle(ctx context.Context, m *manager.Message) (sink.Outcome, error)
}

// Config configures a Pipeline.
type Config struct {
	Handler Handler
	// Ack acks a message (the consumer's Ack).
	Ack func(*manager.Message)
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
}

// New returns a pipeline. Does not block.
func New(cfg Config) *Pipeline {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pipeline{cfg: cfg, log: log, last: map[key]chan struct{}{}}
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
			m.Abandon()
			if ctx.Err() == nil {
				p.fatal.Do(func() {
					if p.cfg.Fatal != nil {
						p.cfg.Fatal(err)
					}
				})
			}
			return
		}
		p.cfg.Ack(m)
	}
	log.Debug("partition worker ended")
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

// Wait blocks until every started worker has ended.
func (p *Pipeline) Wait() { p.wg.Wait() }

package fetch

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"gopkg.in/tomb.v2"

	"github.com/zkgroup/zkgroup/internal/saramawire"
	"github.com/zkgroup/zkgroup/internal/shrink"
)

// Fetcher fetches the partitions added to it, each from its leader, with
// one fetch loop (one goroutine, one connection of its own) per broker
// that leads any of them, and one router goroutine that finds leaders.
// It replaces sarama's Consumer on sarama's protocol layer: the
// sarama.Client gives metadata and leaders and its Config the connection
// settings (TLS, SASL, version, client id); requests are
// sarama.FetchRequest and the records the response's own record batches,
// read by the fetcher (see the package doc), handed to each partition's
// consumer without a copy (see Records).
//
// Cost: per broker fetched from, one goroutine and one TCP connection;
// per fetcher, one router goroutine; per added partition, no goroutine and
// no timer, a Partition and, while its consumer does not take, up to
// Config.PartitionBuffer buffered Records. An idle fetcher holds no timer: a loop with nothing to
// fetch waits on a channel, the router too. Adding, seeking or closing a
// partition applies from its broker's next request; no other partition
// waits for it.
type Fetcher struct {
	client  sarama.Client
	cfg     Config
	version int16
	log     *slog.Logger
	t       tomb.Tomb
	closing atomic.Bool
	// sessions: fetch sessions are used (Config.Sessions, Fetch v7).
	sessions bool
	// topicIDs: requests name topics by id where the ids are known
	// (topicIDsOK).
	topicIDs bool
	// idleWait is Config.IdleWait, kept under half the connections' read
	// timeout (a long poll must not read as a dead broker).
	idleWait time.Duration
	stats    stats
	born     time.Time // New's time, which the loops' answered count from
	// onRequest, when set (tests), hears of every request: its broker,
	// kind, and how many partitions it fetches, names and forgets.
	onRequest func(broker int32, kind, fetched, named, forgotten int)

	mu      sync.Mutex
	parts   map[topicPartition]*Partition
	peak    shrink.Peak            // of parts
	loops   map[string]*brokerLoop // by broker id and address
	pending []routeReq             // partitions to route
	wake    chan struct{}          // cap 1: pending grew

	closeOnce sync.Once
	closeErr  error
}

type topicPartition struct {
	topic     string
	partition int32
}

type routeReq struct {
	p       *Partition
	refresh bool      // refresh the topic's metadata first
	after   time.Time // not before (backoff after a failure)
	to      int32     // the broker to fetch from (a preferred replica); -1: the leader
}

// New returns a Fetcher over client (which it does not close). log may be
// nil (nothing is logged).
func New(client sarama.Client, cfg Config, log *slog.Logger) (*Fetcher, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: client: nil", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	v, err := requestVersion(client.Config().Version)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Fetcher{
		client: client, cfg: cfg, version: v, log: log, born: time.Now(),
		sessions: cfg.Sessions && v >= 7 && saramawire.FetchOK,
		topicIDs: topicIDsOK(client, cfg),
		idleWait: cfg.IdleWait,
		parts:    map[topicPartition]*Partition{},
		loops:    map[string]*brokerLoop{},
		wake:     make(chan struct{}, 1),
	}
	if rt := client.Config().Net.ReadTimeout; rt > 0 {
		f.idleWait = min(f.idleWait, rt/2)
	}
	f.t.Go(f.route)
	return f, nil
}

// Add starts fetching topic/partition at offset (a real offset: resolve
// OffsetOldest/Newest with the client first) and returns the Partition
// its consumer takes records from. It does not block on the network: the
// router finds the leader. ErrExists if the partition is added and not
// closed; ErrClosed after Close.
func (f *Fetcher) Add(topic string, partition int32, offset int64) (*Partition, error) {
	if offset < 0 {
		return nil, fmt.Errorf("%w: Add: offset %d is negative", ErrConfig, offset)
	}
	p := &Partition{
		f: f, topic: topic, partition: partition, ready: make(chan struct{}, 1),
		offset: offset, size: f.cfg.PartitionMaxBytes,
		buf:         make([]*Records, 0, f.cfg.PartitionBuffer),
		leaderEpoch: -1, lastEpoch: -1, replica: -1, avoid: -1,
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing.Load() {
		return nil, ErrClosed
	}
	k := topicPartition{topic, partition}
	if _, ok := f.parts[k]; ok {
		return nil, fmt.Errorf("%w: %s/%d", ErrExists, topic, partition)
	}
	quietPrepMeter(topic) // before a request names it
	f.parts[k] = p
	f.peak.Note(len(f.parts))
	f.pending = append(f.pending, routeReq{p: p, to: -1})
	f.poke()
	return p, nil
}

// forget removes a closed partition from the index.
func (f *Fetcher) forget(p *Partition) {
	f.mu.Lock()
	k := topicPartition{p.topic, p.partition}
	if f.parts[k] == p {
		delete(f.parts, k)
		f.parts = shrink.Map(f.parts, &f.peak)
	}
	f.mu.Unlock()
}

func (f *Fetcher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// reroute hands partitions back to the router (a loop let go of them).
func (f *Fetcher) reroute(refresh, backoff bool, ps ...*Partition) {
	var after time.Time
	if backoff {
		after = time.Now().Add(f.cfg.RetryBackoff)
	}
	f.mu.Lock()
	for _, p := range ps {
		f.pending = append(f.pending, routeReq{p: p, refresh: refresh, after: after, to: -1})
	}
	f.mu.Unlock()
	f.poke()
}

// routeTo hands p back to the router to be fetched from broker id (a
// replica its leader named).
func (f *Fetcher) routeTo(p *Partition, id int32) {
	f.mu.Lock()
	f.pending = append(f.pending, routeReq{p: p, to: id})
	f.mu.Unlock()
	f.poke()
}

// route is the router goroutine: it finds each pending partition's leader
// and gives the partition to that broker's loop, refreshing metadata first
// when a loop reported a leader move, and retrying after RetryBackoff.
// While nothing is pending it waits on a channel only.
func (f *Fetcher) route() error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		f.mu.Lock()
		now := time.Now()
		var due, later []routeReq
		var next time.Time
		for _, r := range f.pending {
			if r.after.After(now) {
				later = append(later, r)
				if next.IsZero() || r.after.Before(next) {
					next = r.after
				}
				continue
			}
			due = append(due, r)
		}
		f.pending = later
		f.mu.Unlock()
		if len(due) > 0 {
			f.routeDue(due)
			continue
		}
		var fire <-chan time.Time
		if !next.IsZero() {
			if timer == nil {
				timer = time.NewTimer(time.Until(next))
			} else {
				timer.Reset(time.Until(next))
			}
			fire = timer.C
		}
		select {
		case <-f.wake:
		case <-fire:
		case <-f.t.Dying():
			return nil
		}
	}
}

func (f *Fetcher) routeDue(due []routeReq) {
	refreshed := map[string]error{}
	for _, r := range due {
		if !f.t.Alive() {
			return
		}
		p := r.p
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			continue
		}
		if r.refresh {
			err, ok := refreshed[p.topic]
			if !ok {
				err = f.client.RefreshMetadata(p.topic)
				refreshed[p.topic] = err
			}
			if err != nil {
				f.log.Debug("metadata refresh failed", "topic", p.topic, "error", err)
			}
		}
		leader, epoch, err := f.client.LeaderAndEpoch(p.topic, p.partition)
		if err != nil {
			f.log.Debug("no leader yet; retrying", "topic", p.topic, "partition", p.partition, "error", err)
			p.setReport(fmt.Errorf("%w: %s/%d: finding the leader: %w", ErrFetch, p.topic, p.partition, err))
			f.reroute(true, true, p)
			continue
		}
		target := leader
		if r.to >= 0 && r.to != leader.ID() {
			if b, err := f.client.Broker(r.to); err == nil {
				target = b
			} else {
				f.log.Debug("preferred replica not found; fetching from the leader", "topic", p.topic, "partition", p.partition, "replica", r.to, "error", err)
			}
		}
		var id sarama.Uuid
		if f.topicIDs {
			id, _ = f.client.(topicIDer).TopicID(p.topic)
		}
		p.mu.Lock()
		p.leaderEpoch = epoch
		p.topicID = id
		if target == leader {
			p.replica = -1
		} else {
			p.replica = target.ID()
			p.replicaUntil = time.Now().Add(f.cfg.ReplicaRecheck)
		}
		p.mu.Unlock()
		l := f.loopFor(target)
		if l == nil {
			return // closing
		}
		l.add(p)
	}
}

// LongPoll is the longest the broker holds one of the fetcher's requests
// waiting for records: an idle loop's wait (Config.IdleWait, kept under
// half the read timeout), or MaxWait when that is longer. An idle
// member's brokers answer it about this far apart.
func (f *Fetcher) LongPoll() time.Duration { return max(f.cfg.MaxWait, f.idleWait) }

// Answered returns when the broker at addr (host:port, as the cluster's
// metadata names it) last answered one of the fetcher's fetch requests:
// a response read whole, whatever its partitions' errors. Zero when no
// loop of the fetcher fetches from addr, or none was answered yet. The
// time carries a monotonic reading. It takes the fetcher's lock, not a
// loop's: cheap enough to call every second.
func (f *Fetcher) Answered(addr string) time.Time {
	var last int64
	f.mu.Lock()
	for _, l := range f.loops {
		if l.addr == addr {
			last = max(last, l.answered.Load())
		}
	}
	f.mu.Unlock()
	if last == 0 {
		return time.Time{}
	}
	return f.born.Add(time.Duration(last))
}

// loopFor returns the loop of broker b, starting it if needed (nil once
// the fetcher is closing).
func (f *Fetcher) loopFor(b *sarama.Broker) *brokerLoop {
	key := strconv.Itoa(int(b.ID())) + "@" + b.Addr()
	f.mu.Lock()
	defer f.mu.Unlock()
	if l, ok := f.loops[key]; ok {
		return l
	}
	if !f.t.Alive() {
		return nil
	}
	l := newBrokerLoop(f, b.ID(), b.Addr())
	f.loops[key] = l
	f.t.Go(l.run)
	return l
}

// Close stops every loop and the router, closes the fetcher's broker
// connections (a fetch in flight is cut short) and waits until all have
// stopped. Every Partition's Take and Poll return ErrClosed afterwards.
// Idempotent; it does not close the client.
func (f *Fetcher) Close() error {
	f.closeOnce.Do(func() {
		f.mu.Lock()
		f.closing.Store(true)
		f.t.Kill(nil)
		loops := make([]*brokerLoop, 0, len(f.loops))
		for _, l := range f.loops {
			loops = append(loops, l)
		}
		f.mu.Unlock()
		for _, l := range loops {
			l.closeConn()
		}
		f.closeErr = f.t.Wait()
		for _, l := range loops {
			l.closeConn()
		}
		f.mu.Lock()
		for _, p := range f.parts {
			p.signal()
		}
		f.mu.Unlock()
	})
	return f.closeErr
}

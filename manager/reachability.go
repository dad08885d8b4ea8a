package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	metrics "github.com/rcrowley/go-metrics"
	"github.com/zkgroup/zkgroup/offsets"
)

// Membership follows Kafka reachability (Config.KafkaUnreachableTimeout):
// a member that no broker answered for the bound, or whose group
// coordinator did not, leaves the group, and joins again once they answer.
//
// The reachability is probed on connections of the probe's own (a copy of
// the clients' sarama config: same dialer, TLS and SASL, with the probe's
// timeouts), so that a probe neither waits behind the fetches and commits
// nor disturbs them: an ApiVersions request to up to probeFanout of the
// fetching client's brokers, and, with Kafka offset storage, a
// FindCoordinator for the group through one that answered and an
// ApiVersions request to that coordinator. The coordinator counts as
// answering when the cluster says the group has none now, and when its
// broker refuses the connection (down, not yet replaced): every member
// sees those alike, and leaving would stop the group for a broker crash.
// Once a round found the coordinator, the next one first asks that broker
// alone for the coordinator: an answer that names itself is an answer of
// both sides in one request; anything else makes the round the full one.
// The probe then keeps its connection to the coordinator alone. Before a
// round found it, the broker the member's commits go to is asked first
// the same way, so that a member going idle after it committed (the
// common case: commits count as the coordinator's answers until then)
// opens one connection, not one to each of probeFanout brokers.
//
// A probe is sent only when needed: the answers the member's own traffic
// gets (fetches, commits: kafkaWatch.evidence) count as the probe's
// would, and a round runs only for a side that had no answer for the
// long poll of an idle member's fetches and a probe interval more
// (probeQuiet: 15 s with the default bound and fetch settings, a probe
// interval at least, a third of the bound at most). A member that
// fetches and commits sends no probe. An idle one (whose fetches
// long-poll, fetch.Config.IdleWait apart) sends none either when it
// fetches from the broker its commits go to, whose answers to those
// fetches count as the coordinator's (kafkaEvidence.coordinatorAt);
// otherwise about one request per probeQuiet. What this leaves unchecked
// while idle: a move of the coordinator to a broker the member cannot
// reach shows at its next commit, which fails, and the bound runs from
// then on.

// Sides of Kafka a member needs to answer.
const (
	sideBrokers     = iota // any broker (fetching)
	sideCoordinator        // the group coordinator (commits, with StorageKafka)
	numSides
)

var sideNames = [numSides]string{"no Kafka broker answered", "the group coordinator did not answer"}

// probeFanout is how many brokers a probe round asks at once.
const probeFanout = 3

// probeInterval is the time between probe rounds for a bound, and the
// bound of each request of a round: a quarter of the bound, from 250 ms to
// 5 s.
func probeInterval(bound time.Duration) time.Duration {
	return min(max(bound/4, 250*time.Millisecond), 5*time.Second)
}

// probeQuiet is how long a side needed may go without an answer, in the
// group, before a probe round is due: the probe interval, or, when the
// member's idle fetches long-poll longer (longPoll: their answers are an
// idle member's evidence), the long poll plus an interval (evidence
// counted at the watch's ticks is dated up to an interval early),
// at most a third of the bound so that rounds still come before it.
func probeQuiet(bound, longPoll time.Duration) time.Duration {
	iv := probeInterval(bound)
	return max(iv, min(longPoll+iv, bound/3))
}

// reachTracker decides from probe results whether a member is out of the
// group for Kafka unreachability. Pure logic: the caller passes the time.
// Not safe for concurrent use.
//
// In the group, it goes out once a side needed has not answered for more
// than bound. Out, it comes back once every side needed has answered
// without a failure in between for settle or more (two probe rounds a
// settle apart), so that a link that flaps does not make the member join
// and leave in turn.
type reachTracker struct {
	bound, settle time.Duration
	// quiet is how long a side may go without an answer before it is
	// probed (probeQuiet; settle unless set).
	quiet  time.Duration
	sides  int // sides needed: 1 (brokers) or 2 (and coordinator)
	last   [numSides]time.Time
	streak [numSides]time.Time // first answer since the last failure; zero after a failure
	out    bool
	reason string
}

func newReachTracker(now time.Time, bound, settle time.Duration, coordinator bool) *reachTracker {
	r := &reachTracker{bound: bound, settle: settle, quiet: settle, sides: 1}
	if coordinator {
		r.sides = 2
	}
	for s := range r.sides {
		r.last[s], r.streak[s] = now, now
	}
	return r
}

// note records a probe of side at now that answered (ok) or failed.
func (r *reachTracker) note(side int, ok bool, now time.Time) {
	if !ok {
		r.streak[side] = time.Time{}
		return
	}
	if now.After(r.last[side]) {
		r.last[side] = now
	}
	if r.streak[side].IsZero() {
		r.streak[side] = now
	}
}

// update applies the rules at now; it reports whether the member is out
// and whether that changed.
func (r *reachTracker) update(now time.Time) (out, changed bool) {
	if !r.out {
		for s := range r.sides {
			if silent := now.Sub(r.last[s]); silent > r.bound {
				r.out = true
				r.reason = fmt.Sprintf("%s for %v (bound %v)", sideNames[s], silent.Round(time.Millisecond), r.bound)
				return true, true
			}
		}
		return false, false
	}
	for s := range r.sides {
		if r.streak[s].IsZero() || now.Sub(r.streak[s]) < r.settle || now.Sub(r.last[s]) > r.bound {
			return true, false
		}
	}
	r.out, r.reason = false, ""
	return false, true
}

// suspect reports whether, in the group, the last probe of a side needed
// failed, or none answered for quiet and a settle window more (the round
// due after quiet waits for its timeouts): the member may be about to
// leave, and should not take partitions meanwhile (if every member is cut
// off, the first to leave would otherwise hand its partitions to the
// others for the moment before they leave too).
func (r *reachTracker) suspect(now time.Time) bool {
	if r.out {
		return false
	}
	for s := range r.sides {
		if r.streak[s].IsZero() || now.Sub(r.last[s]) > r.quiet+r.settle {
			return true
		}
	}
	return false
}

// next is when update may next change its answer without a new note:
// the first side's last answer + bound while in the group; never (zero)
// while out (coming back needs a note).
func (r *reachTracker) next() time.Time {
	if r.out {
		return time.Time{}
	}
	var t time.Time
	for s := range r.sides {
		if d := r.last[s].Add(r.bound); t.IsZero() || d.Before(t) {
			t = d
		}
	}
	return t.Add(time.Millisecond) // strictly past the bound
}

// lastAnswer is when every needed side had last answered.
func (r *reachTracker) lastAnswer() time.Time {
	t := r.last[0]
	for s := 1; s < r.sides; s++ {
		if r.last[s].Before(t) {
			t = r.last[s]
		}
	}
	return t
}

// kafkaPhase is where a member is in leaving and joining for Kafka
// reachability.
type kafkaPhase int

const (
	phaseIn      kafkaPhase = iota // a member of the group
	phaseLeaving                   // partitions stopping; still registered
	phaseOut                       // deregistered; waiting for Kafka
)

// kafkaWatch tracks the reachability of Kafka for a consumer and the
// consumer's phase. Safe for concurrent use.
type kafkaWatch struct {
	probe    *kafkaProbe
	interval time.Duration
	log      *slog.Logger
	// changed is signalled (buffered 1) when the verdict changed.
	changed chan struct{}

	// evidence, when set, returns what the member's own traffic got from
	// Kafka (see kafkaEvidence), so that a member whose probes time out
	// only because its process is starved (a busy machine) is not taken
	// for cut off while its fetches and commits are answered, and an idle
	// member whose fetches the coordinator's broker answers sends no
	// probe. Called by run only.
	evidence    func() kafkaEvidence
	lastEv      [numSides]uint64
	lastEvAt    time.Time
	lastCoordAt time.Time // evidence's coordinatorAt at the previous call

	mu       sync.Mutex
	tr       *reachTracker
	phase    kafkaPhase // the loop's, under mu for Stats
	leftAt   time.Time  // when the phase left phaseIn
	reason   string     // why it left
	leaves   uint64
	lastSeen time.Time // tr.lastAnswer, for Stats
}

func newKafkaWatch(now time.Time, bound, longPoll time.Duration, probe *kafkaProbe, log *slog.Logger) *kafkaWatch {
	iv := probeInterval(bound)
	w := &kafkaWatch{
		probe: probe, interval: iv, log: log, changed: make(chan struct{}, 1),
		tr: newReachTracker(now, bound, iv, probe.coordinator), lastSeen: now,
	}
	w.tr.quiet = probeQuiet(bound, longPoll)
	return w
}

// unreachable reports the tracker's verdict.
func (w *kafkaWatch) unreachable() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tr.out
}

// suspect reports the tracker's suspect (see reachTracker.suspect).
func (w *kafkaWatch) suspect() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tr.suspect(time.Now())
}

// deadline is the last answer of every side needed + the bound: past it
// the member is out.
func (w *kafkaWatch) deadline() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tr.lastAnswer().Add(w.tr.bound)
}

// getPhase returns the consumer's phase.
func (w *kafkaWatch) getPhase() kafkaPhase {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.phase
}

// run probes every interval and evaluates the verdict at the rounds' ends
// and when a bound passes, until dying is closed. It signals changed when
// the verdict changes.
func (w *kafkaWatch) run(dying <-chan struct{}) {
	type result struct {
		at   time.Time
		oks  [numSides]bool
		asks [numSides]bool
	}
	results := make(chan result, 1)
	inflight := false
	// Twice per interval: the evidence is dated at the previous tick (see
	// noteEvidence), so that a round is due no later than quiet and half
	// an interval after the last answer. Once an interval while calm
	// (tickEvery: in the group, not suspect, quiet at least two
	// intervals), so an interval after quiet at most: with the default
	// bound, a round is due within 20 s of the last answer of 45.
	tick := time.NewTimer(w.tickEvery(time.Now()))
	defer tick.Stop()
	eval := time.NewTimer(w.interval)
	defer eval.Stop()
	defer func() {
		w.probe.close()
		if inflight {
			<-results
		}
		w.probe.close() // what the last round opened
	}()
	evaluate := func(now time.Time) {
		w.mu.Lock()
		out, changed := w.tr.update(now)
		w.lastSeen = w.tr.lastAnswer()
		reason, next := w.tr.reason, w.tr.next()
		w.mu.Unlock()
		if changed {
			if out {
				w.log.Warn("kafka unreachable: leaving the group until it answers", "reason", reason)
			} else {
				w.log.Info("kafka answers again: joining the group")
			}
			select {
			case w.changed <- struct{}{}:
			default:
			}
		}
		if !next.IsZero() {
			eval.Reset(max(time.Until(next), 0))
		}
	}
	for {
		select {
		case <-dying:
			return
		case <-tick.C:
			now := time.Now()
			w.noteEvidence(now)
			tick.Reset(w.tickEvery(now))
			if inflight || !w.due(now) {
				continue
			}
			inflight = true
			go func() {
				// An answer came after the round began: its start is the
				// time noted, so that the member leaves no later than the
				// bound after the last answer.
				r := result{at: time.Now()}
				r.oks, r.asks = w.probe.round()
				results <- r
			}()
		case r := <-results:
			inflight = false
			w.mu.Lock()
			for s := range numSides {
				if r.asks[s] {
					w.tr.note(s, r.oks[s], r.at)
				}
			}
			w.mu.Unlock()
			evaluate(time.Now())
		case <-eval.C:
			evaluate(time.Now())
		}
	}
}

// tickEvery is the time from now to the watch's next tick: half an
// interval, or an interval while the member is calm (in the group, not
// suspect) and quiet is at least two intervals (an idle member's long poll, the
// default): evidence dated up to an interval early is then still inside
// quiet (probeQuiet allows the long poll and an interval), and an idle
// member wakes half as often for the watch.
func (w *kafkaWatch) tickEvery(now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tr.out || w.tr.quiet < 2*w.interval || w.tr.suspect(now) {
		return w.interval / 2
	}
	return w.interval
}

// due reports whether a probe round is needed at now: out of the group
// (coming back takes probes), or a side needed has not answered for
// quiet (probeQuiet), or its last probe failed.
func (w *kafkaWatch) due(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tr.out {
		return true
	}
	for s := range w.tr.sides {
		if w.tr.streak[s].IsZero() || now.Sub(w.tr.last[s]) >= w.tr.quiet {
			return true
		}
	}
	return false
}

// noteEvidence notes an answer of each side whose evidence counter grew
// since the previous call, dated at that call (the answer came after it),
// and the coordinator's answer to a fetch at its own time when that time
// is later than at the previous call.
func (w *kafkaWatch) noteEvidence(now time.Time) {
	if w.evidence == nil {
		return
	}
	ev := w.evidence()
	cur := [numSides]uint64{ev.brokers, ev.coordinator}
	fetched := ev.coordinatorAt.After(w.lastCoordAt) // since the previous call
	if !w.lastEvAt.IsZero() {
		w.mu.Lock()
		for s := range w.tr.sides {
			if cur[s] != w.lastEv[s] {
				w.tr.note(s, true, w.lastEvAt)
			}
		}
		if fetched && w.tr.sides > sideCoordinator {
			w.tr.note(sideCoordinator, true, ev.coordinatorAt)
		}
		w.mu.Unlock()
	}
	w.lastEv, w.lastEvAt = cur, now
	if fetched {
		w.lastCoordAt = ev.coordinatorAt
	}
}

// kafkaEvidence is what the member's own traffic tells of Kafka's
// answers.
type kafkaEvidence struct {
	// brokers and coordinator count answers of any broker and of the
	// coordinator (commits): a counter that grew since the previous tick
	// counts as an answer at that tick.
	brokers, coordinator uint64
	// coordinatorAt is when the broker the member's commits go to last
	// answered one of its fetches (zero: unknown). A later time than at
	// the previous tick is an answer of the coordinator at that time: the
	// broker answers over the network the commits would take. Should the
	// cluster have moved the coordinator meanwhile, the next commit finds
	// the new one, and until that commit is answered only the probe
	// counts (the commits' address is unknown while they fail).
	coordinatorAt time.Time
}

// kafkaProbe asks brokers whether they answer, on connections of its own.
// round is called by one goroutine at a time; close may be called
// concurrently with it.
type kafkaProbe struct {
	conf        *sarama.Config
	group       string
	coordinator bool            // probe the group coordinator too
	brokers     func() []string // the addresses to probe
	log         *slog.Logger

	// coord is the coordinator's address as the last round found it
	// answering ("" when unknown): the next round asks it first. Used by
	// round only.
	coord string
	// hint, when set, returns the coordinator's address as the member's
	// commits know it ("" when they do not): asked first while coord is
	// unknown. It must not block.
	hint func() string

	mu    sync.Mutex
	conns map[string]*sarama.Broker
}

// newKafkaProbe copies base for the probe's connections, each request
// bounded by timeout.
func newKafkaProbe(base *sarama.Config, timeout time.Duration, group string, coordinator bool, brokers func() []string, log *slog.Logger) *kafkaProbe {
	conf := *base
	conf.Net.DialTimeout, conf.Net.ReadTimeout, conf.Net.WriteTimeout = timeout, timeout, timeout
	conf.MetricRegistry = newKeptMetrics() // the probe's brokers stay out of the clients' metrics, and keep none
	// The probe's own ApiVersions request is the only one: sarama's at
	// connect would wait out up to two more timeouts on a silent broker.
	conf.ApiVersionsRequest = false
	return &kafkaProbe{conf: &conf, group: group, coordinator: coordinator, brokers: brokers, log: log,
		conns: map[string]*sarama.Broker{}}
}

// round asks up to probeFanout brokers at once and, with coordinator, the
// group's coordinator; oks says which sides answered, asks which were
// asked (the coordinator is not asked when no broker answered: it failed
// too, as it cannot be found). The coordinator side fails only when the
// member cannot reach what the cluster names as the coordinator: a
// broker's answer that there is none now counts as an answer. When the
// previous round found the coordinator, that broker is asked first, alone
// (quick); the full round follows only if it does not answer.
func (p *kafkaProbe) round() (oks, asks [numSides]bool) {
	if oks, asks, ok := p.quick(); ok {
		return oks, asks
	}
	addrs := p.brokers()
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	addrs = addrs[:min(len(addrs), probeFanout)]
	answered := make(chan *sarama.Broker, len(addrs))
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Go(func() {
			if b, _ := p.ping(a); b != nil {
				answered <- b
			}
		})
	}
	wg.Wait()
	close(answered)
	via, ok := <-answered
	asks[sideBrokers], oks[sideBrokers] = true, ok
	if !p.coordinator {
		return oks, asks
	}
	asks[sideCoordinator] = true
	if !ok {
		return oks, asks
	}
	resp, err := p.findCoordinator(via)
	if err != nil {
		p.drop(via.Addr(), err)
		return oks, asks
	}
	oks[sideCoordinator] = p.coordinatorAnswers(via, resp)
	if p.coord != "" {
		// The next round asks the coordinator alone (quick): the other
		// connections would stay idle, each with a goroutine of sarama's.
		// A full round opens them again.
		for _, b := range append([]*sarama.Broker{via}, drain(answered)...) {
			if b.Addr() != p.coord {
				p.release(b.Addr())
			}
		}
	}
	return oks, asks
}

// drain returns what is left in a closed channel.
func drain[T any](ch <-chan T) []T {
	var out []T
	for v := range ch {
		out = append(out, v)
	}
	return out
}

// quick asks the coordinator the previous round found (or, before one
// found it, the hint's) for the group's coordinator. ok: it answered (a
// broker did, and the coordinator side is settled as in a full round);
// otherwise nothing was noted and the full round is due.
func (p *kafkaProbe) quick() (oks, asks [numSides]bool, ok bool) {
	addr := p.coord
	p.coord = ""
	if addr == "" && p.hint != nil {
		addr = p.hint()
	}
	if !p.coordinator || addr == "" {
		return oks, asks, false
	}
	via, err := p.open(addr)
	if err != nil {
		return oks, asks, false
	}
	resp, err := p.findCoordinator(via)
	if err != nil {
		p.drop(addr, err)
		return oks, asks, false
	}
	oks[sideBrokers], asks[sideBrokers], asks[sideCoordinator] = true, true, true
	oks[sideCoordinator] = p.coordinatorAnswers(via, resp)
	if p.coord != "" && p.coord != addr {
		p.release(addr) // the coordinator moved: asked there from now on
	}
	return oks, asks, true
}

// findCoordinator asks via for the group's coordinator, as sarama's
// client asks.
func (p *kafkaProbe) findCoordinator(via *sarama.Broker) (*sarama.FindCoordinatorResponse, error) {
	req := &sarama.FindCoordinatorRequest{CoordinatorKey: p.group, CoordinatorType: sarama.CoordinatorGroup}
	switch v := p.conf.Version; {
	case v.IsAtLeast(sarama.V2_4_0_0):
		req.Version = 3
	case v.IsAtLeast(sarama.V2_0_0_0):
		req.Version = 2
	case v.IsAtLeast(sarama.V0_11_0_0):
		req.Version = 1
	}
	return via.FindCoordinator(req)
}

// coordinatorAnswers settles the coordinator side from via's answer to
// FindCoordinator: the coordinator answers if the cluster names none now,
// if it is via, or if it answers an ApiVersions request or refuses the
// connection (down). The coordinator, when it answered, is asked first
// next round.
func (p *kafkaProbe) coordinatorAnswers(via *sarama.Broker, resp *sarama.FindCoordinatorResponse) bool {
	if resp.Err != sarama.ErrNoError || resp.Coordinator == nil {
		// The cluster answered that the group has no coordinator now (its
		// __consumer_offsets partition being created, moved or loaded):
		// every member sees the same, and leaving would not help anyone.
		// That is Kafka answering, not this member being cut off.
		p.log.Debug("kafka probe: no coordinator now", "error", resp.Err)
		return true
	}
	addr := resp.Coordinator.Addr()
	if addr == via.Addr() {
		p.coord = addr
		return true
	}
	b, err := p.ping(addr)
	switch {
	case b != nil:
		p.coord = addr
		return true
	case errors.Is(err, syscall.ECONNREFUSED):
		// The coordinator's host answered with a reset: its broker is
		// down (killed, restarting) and the cluster has not moved the
		// coordinator yet (a crashed broker stays registered for Kafka's
		// zookeeper.session.timeout.ms, 18 s by default). Every member
		// sees the same, and leaving would only stop the whole group:
		// that is Kafka answering, not this member being cut off (a cut
		// drops packets; it does not refuse them).
		p.log.Debug("kafka probe: the coordinator's broker refuses connections; it is down, not cut off", "broker", addr)
		return true
	}
	return false
}

// ping sends an ApiVersions request to addr, on the probe's connection to
// it (opened if need be); it returns that connection if it answered, or
// the error.
func (p *kafkaProbe) ping(addr string) (*sarama.Broker, error) {
	b, err := p.open(addr)
	if err != nil {
		return nil, err
	}
	if _, err := b.ApiVersions(&sarama.ApiVersionsRequest{}); err != nil {
		p.drop(addr, err)
		return nil, err
	}
	return b, nil
}

// open returns the probe's connection to addr, opening it if need be.
func (p *kafkaProbe) open(addr string) (*sarama.Broker, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil { // closed
		return nil, errProbeClosed
	}
	b := p.conns[addr]
	if b == nil {
		b = sarama.NewBroker(addr)
		if err := b.Open(p.conf); err != nil {
			p.log.Debug("kafka probe: open failed", "broker", addr, "error", err)
			return nil, err
		}
		p.conns[addr] = b
	}
	return b, nil
}

// errProbeClosed is ping's error after the probe was closed.
var errProbeClosed = errors.New("manager: kafka probe closed")

// drop closes the connection to addr after err.
func (p *kafkaProbe) drop(addr string, err error) {
	p.log.Debug("kafka probe: no answer", "broker", addr, "error", err)
	p.release(addr)
}

// release closes the connection to addr, no longer needed.
func (p *kafkaProbe) release(addr string) {
	p.mu.Lock()
	b := p.conns[addr]
	delete(p.conns, addr)
	p.mu.Unlock()
	if b != nil {
		_ = b.Close()
	}
}

// close closes every connection; later rounds open new ones.
func (p *kafkaProbe) close() {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[string]*sarama.Broker{}
	p.mu.Unlock()
	for _, b := range conns {
		_ = b.Close()
	}
}

// newKafkaWatch sets up the probing of Kafka for the consumer: the brokers
// of the fetching client (seeds before it knows any) and, with Kafka
// offset storage, the group's coordinator, whose answers to the
// consumer's store (conns.store: its kafkaStats) count as the
// coordinator's. It returns st, bounded by the reachability
// (kafkaBoundStore) when it is Kafka's. runKafkaWatch starts the probes.
func (c *Consumer) newKafkaWatch(seeds []string, base *sarama.Config, st store) store {
	bound := c.cfg.kafkaBound()
	brokers := func() []string {
		var out []string
		for _, b := range c.client.Brokers() {
			out = append(out, b.Addr())
		}
		if len(out) == 0 {
			out = append(out, seeds...)
		}
		return out
	}
	inKafka := c.cfg.OffsetStorage == StorageKafka
	p := newKafkaProbe(base, probeInterval(bound), c.group, inKafka, brokers, c.log.With("component", "kafka-probe"))
	c.kafka = newKafkaWatch(time.Now(), bound, c.fetcher.LongPoll(), p, c.log)
	if inKafka {
		p.hint = func() string {
			if c.store == nil { // set once newKafkaWatch returned, before run starts
				return ""
			}
			s, _ := c.store.kafkaStats()
			return s.Coordinator
		}
	}
	c.kafka.evidence = func() kafkaEvidence {
		var ev kafkaEvidence
		if c.client != nil {
			ev.brokers = responses(c.client.Config())
		}
		if c.store != nil { // set once newKafkaWatch returned, before run starts
			if s, ok := c.store.kafkaStats(); ok {
				ev.coordinator = s.Committed + s.Verified
				if s.Coordinator != "" && c.fetcher != nil {
					ev.coordinatorAt = c.fetcher.Answered(s.Coordinator)
				}
			}
		}
		return ev
	}
	if !inKafka {
		return st
	}
	return kafkaBoundStore{store: st, w: c.kafka}
}

// runKafkaWatch probes until the consumer is dying.
func (c *Consumer) runKafkaWatch() error {
	c.kafka.run(c.t.Dying())
	return nil
}

// kafkaBoundStore gives every request to Kafka's offset store a deadline
// no later than the last answer of Kafka to the probe + the bound, and
// sends nothing past it: by the time the member leaves the group for
// Kafka unreachability (at that instant), none of its commits is still
// waiting, so its partitions stop at once and their next owners do not
// wait for a commit that could not be made. A Release is always passed on
// (it forgets the partition), bounded likewise.
type kafkaBoundStore struct {
	store
	w *kafkaWatch
}

func (s kafkaBoundStore) bounded(ctx context.Context) (context.Context, context.CancelFunc, error) {
	d := s.w.deadline()
	ctx, cancel := context.WithDeadline(ctx, d)
	if !time.Now().Before(d) {
		return ctx, cancel, fmt.Errorf("%w: no answer since %s", ErrKafkaUnreachable, d.Add(-s.w.tr.bound).Format(time.RFC3339Nano))
	}
	return ctx, cancel, nil
}

func (s kafkaBoundStore) Fetch(ctx context.Context, topic string, partition int32) (int64, bool, error) {
	ctx, cancel, err := s.bounded(ctx)
	defer cancel()
	if err != nil {
		return 0, false, err
	}
	return s.store.Fetch(ctx, topic, partition)
}

func (s kafkaBoundStore) Commit(ctx context.Context, topic string, partition int32, next int64) error {
	ctx, cancel, err := s.bounded(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return s.store.Commit(ctx, topic, partition, next)
}

func (s kafkaBoundStore) CommitBatch(ctx context.Context, batch []offsets.Offset) []error {
	ctx, cancel, err := s.bounded(ctx)
	defer cancel()
	if err != nil {
		errs := make([]error, len(batch))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	return s.store.CommitBatch(ctx, batch)
}

// Reset moves a committed offset backwards (a seek), bounded likewise.
func (s kafkaBoundStore) Reset(ctx context.Context, topic string, partition int32, next int64) error {
	ctx, cancel, err := s.bounded(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	return s.store.Reset(ctx, topic, partition, next)
}

func (s kafkaBoundStore) Release(ctx context.Context, topic string, partition int32) error {
	ctx, cancel, _ := s.bounded(ctx)
	defer cancel()
	return s.store.Release(ctx, topic, partition)
}

// followKafka moves the member along its phases from the probe's verdict:
// in the group while Kafka answers; leaving (partitions stopping) once it
// does not; out (deregistered) once they stopped; in again once it
// answers. The loop calls it when the verdict changed, after slot events
// and, while the member is not in the group, every second (which retries
// a failed deregistration or registration: checkNeeded). trigger starts
// the rebalance of a member back in.
func (l *loopState) followKafka() {
	c := l.c
	unreachable := c.kafka.unreachable()
	switch c.kafka.getPhase() {
	case phaseIn:
		if unreachable {
			l.leaveForKafka()
			l.leftForKafka() // at once if nothing was running
		}
	case phaseLeaving:
		l.leftForKafka()
	case phaseOut:
		if !unreachable {
			l.rejoinForKafka()
		}
	}
}

// leaveForKafka stops every partition without a drain or a final commit
// (Kafka cannot take one; the next owner starts from the last commit) and
// forgets the assignment, so that no partition is claimed again. Each
// slot releases its owner node once its partition manager stopped
// (runSlot); leftForKafka deregisters after that.
func (l *loopState) leaveForKafka() {
	c := l.c
	w := c.kafka
	w.mu.Lock()
	w.phase, w.leftAt, w.reason = phaseLeaving, time.Now(), w.tr.reason
	w.leaves++
	reason := w.reason
	w.mu.Unlock()
	c.mu.Lock()
	stopped := 0
	c.assigned = nil
	g := c.cb.newGroupLocked(cbLost) // this leave's OnLost
	for tp, sl := range c.slots {
		sl.lose.Store(true)
		if sl.state != stopping {
			sl.stopLocked(g)
			stopped++
		}
		delete(c.restartBackoff, tp)
	}
	c.checkAppliedLocked()
	c.mu.Unlock()
	c.log.Warn("kafka unreachable: stopping every partition without committing, then leaving the group",
		"partitions", stopped, "reason", reason)
}

// leftForKafka deregisters a leaving member once every partition stopped
// and released its owner node, or once the bound passed again with some
// still stopping (a drain begun before: they keep their owner nodes until
// they stopped, so nobody else fetches them meanwhile). A failed
// deregistration is tried again at the next call.
func (l *loopState) leftForKafka() {
	c := l.c
	w := c.kafka
	w.mu.Lock()
	leftAt, bound := w.leftAt, w.tr.bound
	w.mu.Unlock()
	c.mu.Lock()
	running := len(c.slots)
	c.mu.Unlock()
	if running > 0 && time.Since(leftAt) < bound {
		return
	}
	if !c.session.Status().HasSession {
		return // the registration goes with the session if it expires; else the next call deletes it
	}
	// A static member leaves without its restart marker: it leaves so
	// that others take its partitions over, not to have them kept for
	// it. Registering again writes the marker again.
	if c.cfg.RestartGrace > 0 {
		if err := within(c.cfg.SessionTimeout, func() error { return writeMarker(c.session, c.group, c.id, nil, 0) }); err != nil {
			c.log.Warn("deleting the restart marker failed; retrying", "error", err)
			return
		}
	}
	if err := within(c.cfg.SessionTimeout, func() error { return deregister(c.session, c.group, c.id) }); err != nil {
		c.log.Warn("deregistering failed; retrying", "error", err)
		return
	}
	w.mu.Lock()
	w.phase = phaseOut
	w.mu.Unlock()
	c.log.Warn("left the group: kafka unreachable; joining again once it answers",
		"still_stopping", running, "took", time.Since(leftAt))
}

// rejoinForKafka registers the member again under the current session
// and starts a rebalance. A failed registration is tried again at the
// next call.
func (l *loopState) rejoinForKafka() {
	c := l.c
	st := c.session.Status()
	if !st.HasSession {
		return
	}
	if err := l.reregister(st); err != nil {
		c.log.Warn("registering again after kafka answered failed; retrying", "error", err)
		return
	}
	w := c.kafka
	w.mu.Lock()
	w.phase = phaseIn
	out := time.Since(w.leftAt)
	w.mu.Unlock()
	c.log.Info("kafka answers again: joined the group", "out_for", out)
	l.trigger(CauseKafka)
}

// kafkaStats fills the Kafka reachability fields of s.
func (c *Consumer) kafkaStats(s *Stats) {
	w := c.kafka
	w.mu.Lock()
	defer w.mu.Unlock()
	s.KafkaUnreachable = w.phase != phaseIn
	if s.KafkaUnreachable {
		s.KafkaUnreachableSince, s.KafkaUnreachableReason = w.leftAt, w.reason
	}
	s.KafkaLastAnswer, s.KafkaLeaves = w.lastSeen, w.leaves
}

// responses is the number of responses the brokers of a sarama client
// with this config answered (sarama's "response-rate" meter; 0 without
// metrics).
func responses(conf *sarama.Config) uint64 {
	if conf == nil || conf.MetricRegistry == nil {
		return 0
	}
	if m, ok := conf.MetricRegistry.Get(metricResponses).(metrics.Meter); ok {
		return uint64(m.Count())
	}
	return 0
}

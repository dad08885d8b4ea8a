package manager

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestKafkaWatchDue: a probe round is due only for a side needed that
// had no answer (probe or the member's own traffic) for an interval, whose
// last probe failed, or while the member is out.
func TestKafkaWatchDue(t *testing.T) {
	const bound = 8 * time.Second // interval 2 s
	w, _, at := watchOnFakeClock(bound, true)
	if w.interval != 2*time.Second {
		t.Fatalf("interval %v", w.interval)
	}
	var brokers, coord uint64
	w.evidence = func() kafkaEvidence { return kafkaEvidence{brokers: brokers, coordinator: coord} }
	w.noteEvidence(at(0))
	if w.due(at(time.Second)) {
		t.Fatal("due 1 s after the start (answers as of the start)")
	}
	if !w.due(at(2 * time.Second)) {
		t.Fatal("not due an interval after the last answer")
	}
	// Both sides answered the member's traffic since the tick at 1 s
	// (noted at 1 s when seen at 2 s).
	w.noteEvidence(at(time.Second))
	brokers, coord = 1, 1
	w.noteEvidence(at(2 * time.Second))
	if w.due(at(2500 * time.Millisecond)) {
		t.Fatal("due though both sides answered since 1 s")
	}
	// Only the brokers keep answering: the coordinator side is due.
	brokers++
	w.noteEvidence(at(3 * time.Second))
	if w.due(at(2900 * time.Millisecond)) {
		t.Fatal("due before an interval passed since the coordinator's last answer")
	}
	if !w.due(at(3 * time.Second)) {
		t.Fatal("not due an interval after the coordinator's last answer, with the brokers answering")
	}
	// A failed probe makes the next round due whatever the evidence.
	brokers++
	coord++
	w.noteEvidence(at(3500 * time.Millisecond))
	if w.due(at(3600 * time.Millisecond)) {
		t.Fatal("due though both sides answered since 3 s")
	}
	w.mu.Lock()
	w.tr.note(sideCoordinator, false, at(3600*time.Millisecond))
	w.mu.Unlock()
	if !w.due(at(3100 * time.Millisecond)) {
		t.Fatal("not due after a failed probe")
	}
	w.mu.Lock()
	w.tr.note(sideCoordinator, true, at(3200*time.Millisecond))
	w.tr.out = true
	w.mu.Unlock()
	if !w.due(at(3300 * time.Millisecond)) {
		t.Fatal("not due while out")
	}
}

// TestProbeQuickRound: with a coordinator found, a round is one
// FindCoordinator to it (an answer naming itself settles both sides);
// when it names another broker, that one is pinged, and asked first next
// time; when the coordinator found does not answer, the full round runs
// (pings of the brokers, then FindCoordinator through one that answered,
// then the coordinator pinged).
func TestProbeQuickRound(t *testing.T) {
	const group = "g"
	a := sarama.NewMockBroker(t, 1)
	defer a.Close()
	b := sarama.NewMockBroker(t, 2)
	bOpen := true
	defer func() {
		if bOpen {
			b.Close()
		}
	}()
	coordIs := func(mb *sarama.MockBroker) sarama.MockResponse {
		return sarama.NewMockFindCoordinatorResponse(t).SetCoordinator(sarama.CoordinatorGroup, group, mb)
	}
	handlers := func(coord *sarama.MockBroker) map[string]sarama.MockResponse {
		return map[string]sarama.MockResponse{
			"ApiVersionsRequest":     sarama.NewMockApiVersionsResponse(t),
			"FindCoordinatorRequest": coordIs(coord),
		}
	}
	a.SetHandlerByMap(handlers(a))
	b.SetHandlerByMap(handlers(a))
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	addrs := []string{a.Addr()}
	p := newKafkaProbe(cfg, 5*time.Second, group, true, func() []string { return append([]string(nil), addrs...) }, slog.New(slog.DiscardHandler))
	defer p.close()
	kinds := func(mb *sarama.MockBroker, from int) (api, find int) {
		for _, rr := range mb.History()[from:] {
			switch rr.Request.(type) {
			case *sarama.ApiVersionsRequest:
				api++
			case *sarama.FindCoordinatorRequest:
				find++
			}
		}
		return api, find
	}
	check := func(name string, wantOK bool) {
		t.Helper()
		oks, asks := p.round()
		if asks != [numSides]bool{true, true} || oks != [numSides]bool{wantOK, wantOK} {
			t.Fatalf("%s: oks %v asks %v", name, oks, asks)
		}
	}

	check("first round (full)", true)
	if api, find := kinds(a, 0); api != 1 || find != 1 {
		t.Fatalf("first round: %d ApiVersions, %d FindCoordinator; want 1 and 1", api, find)
	}
	n := len(a.History())
	check("second round (quick)", true)
	if api, find := kinds(a, n); api != 0 || find != 1 {
		t.Fatalf("second round: %d ApiVersions, %d FindCoordinator; want one FindCoordinator only", api, find)
	}

	// The coordinator moves to b: a names it, b is pinged, then asked
	// first.
	a.SetHandlerByMap(handlers(b))
	b.SetHandlerByMap(handlers(b))
	check("coordinator moved", true)
	if api, _ := kinds(b, 0); api != 1 {
		t.Fatalf("the new coordinator was not pinged: %d ApiVersions", api)
	}
	nb, na := len(b.History()), len(a.History())
	check("quick on the new coordinator", true)
	if api, find := kinds(b, nb); api != 0 || find != 1 || len(a.History()) != na {
		t.Fatalf("quick round on b: %d ApiVersions, %d FindCoordinator on b, %d requests to a", api, find, len(a.History())-na)
	}

	// b goes down (closed: connections refused): the quick round fails,
	// the full one pings a, which names b, which refuses (down: counts as
	// answering, as ever).
	b.Close()
	bOpen = false
	na = len(a.History())
	check("coordinator down", true)
	if api, find := kinds(a, na); api != 1 || find != 1 {
		t.Fatalf("full round after the quick one failed: %d ApiVersions, %d FindCoordinator to a; want 1 and 1", api, find)
	}
}

// TestProbeFullRoundKeepsCoordinator: a full round pings several brokers;
// once it found the coordinator, the connections to the others are
// closed (the next rounds ask the coordinator alone).
func TestProbeFullRoundKeepsCoordinator(t *testing.T) {
	const group = "g"
	a := sarama.NewMockBroker(t, 1)
	defer a.Close()
	b := sarama.NewMockBroker(t, 2)
	defer b.Close()
	for _, mb := range []*sarama.MockBroker{a, b} {
		mb.SetHandlerByMap(map[string]sarama.MockResponse{
			"ApiVersionsRequest":     sarama.NewMockApiVersionsResponse(t),
			"FindCoordinatorRequest": sarama.NewMockFindCoordinatorResponse(t).SetCoordinator(sarama.CoordinatorGroup, group, a),
		})
	}
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	p := newKafkaProbe(cfg, 5*time.Second, group, true, func() []string { return []string{a.Addr(), b.Addr()} }, slog.New(slog.DiscardHandler))
	defer p.close()
	if oks, _ := p.round(); oks != [numSides]bool{true, true} {
		t.Fatalf("full round: oks %v", oks)
	}
	p.mu.Lock()
	_, toA := p.conns[a.Addr()]
	n := len(p.conns)
	p.mu.Unlock()
	if !toA || n != 1 {
		t.Errorf("after the full round: %d connections, to the coordinator %v; want it alone", n, toA)
	}
	if oks, _ := p.round(); oks != [numSides]bool{true, true} {
		t.Fatalf("quick round: oks %v", oks)
	}
}

// TestProbeFirstRoundAsksHint: before any round found the coordinator,
// the first round asks the one the member's commits go to (the hint)
// alone: one FindCoordinator, no connection to the other brokers. A hint
// that does not answer leaves the full round to settle both sides.
func TestProbeFirstRoundAsksHint(t *testing.T) {
	const group = "g"
	var mbs []*sarama.MockBroker
	for id := range int32(3) {
		mb := sarama.NewMockBroker(t, id+1)
		defer mb.Close()
		mbs = append(mbs, mb)
	}
	coord := mbs[1]
	for _, mb := range mbs {
		mb.SetHandlerByMap(map[string]sarama.MockResponse{
			"ApiVersionsRequest":     sarama.NewMockApiVersionsResponse(t),
			"FindCoordinatorRequest": sarama.NewMockFindCoordinatorResponse(t).SetCoordinator(sarama.CoordinatorGroup, group, coord),
		})
	}
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	addrs := func() []string { return []string{mbs[0].Addr(), mbs[1].Addr(), mbs[2].Addr()} }
	newProbe := func(hint string) *kafkaProbe {
		p := newKafkaProbe(cfg, 5*time.Second, group, true, addrs, slog.New(slog.DiscardHandler))
		p.hint = func() string { return hint }
		return p
	}
	requests := func() (n []int) {
		for _, mb := range mbs {
			n = append(n, len(mb.History()))
		}
		return n
	}

	p := newProbe(coord.Addr())
	if oks, asks := p.round(); oks != [numSides]bool{true, true} || asks != [numSides]bool{true, true} {
		t.Fatalf("first round with the hint: oks %v asks %v", oks, asks)
	}
	p.close()
	if n := requests(); n[0] != 0 || n[1] != 1 || n[2] != 0 {
		t.Fatalf("first round with the hint: requests per broker %v; want one FindCoordinator to the coordinator alone", n)
	}

	// The hint names an address nothing listens on: the full round runs.
	dead := sarama.NewMockBroker(t, 9)
	deadAddr := dead.Addr()
	dead.Close()
	before := requests()
	p = newProbe(deadAddr)
	defer p.close()
	if oks, _ := p.round(); oks != [numSides]bool{true, true} {
		t.Fatalf("first round with a dead hint: oks %v", oks)
	}
	after, pinged := requests(), 0
	for i := range after {
		if after[i] > before[i] {
			pinged++
		}
	}
	if pinged < 2 {
		t.Fatalf("first round with a dead hint: %d brokers asked (%v -> %v); want the full round", pinged, before, after)
	}
}

// TestKafkaWatchCoordinatorFetched: the time the coordinator's broker
// last answered a fetch counts as the coordinator's answer at that time,
// once it is later than at the previous tick: an idle member (no commits)
// whose fetches that broker answers needs no probe of the coordinator; a
// time that stops advancing counts no more, and does not restart the
// streak that a failed probe ended.
func TestKafkaWatchCoordinatorFetched(t *testing.T) {
	const bound = 8 * time.Second // interval 2 s
	w, t0, at := watchOnFakeClock(bound, true)
	var brokers uint64
	var fetched time.Time
	w.evidence = func() kafkaEvidence { return kafkaEvidence{brokers: brokers, coordinatorAt: fetched} }
	fetched = at(-time.Second) // before the watch began: the baseline
	w.noteEvidence(at(0))
	for s := 1; s <= 10; s++ {
		brokers++
		fetched = at(time.Duration(s)*time.Second - 300*time.Millisecond)
		w.noteEvidence(at(time.Duration(s) * time.Second))
		if w.due(at(time.Duration(s) * time.Second)) {
			t.Fatalf("due at %ds though the coordinator's broker answered a fetch at %v", s, fetched.Sub(t0))
		}
	}
	w.mu.Lock()
	last := w.tr.last[sideCoordinator]
	w.mu.Unlock()
	if !last.Equal(at(9700 * time.Millisecond)) {
		t.Fatalf("coordinator's last answer %v, want the fetch's time 9.7s", last.Sub(t0))
	}
	// The fetches stop being answered: the time stands still, and the
	// coordinator side is due an interval after it.
	brokers++
	w.noteEvidence(at(11 * time.Second))
	if !w.due(at(11700 * time.Millisecond)) {
		t.Fatal("not due an interval after the last fetch the coordinator's broker answered")
	}
	// A failed probe ends the streak; the same time seen again does not
	// count as a new answer.
	w.mu.Lock()
	w.tr.note(sideCoordinator, false, at(12*time.Second))
	w.mu.Unlock()
	w.noteEvidence(at(12500 * time.Millisecond))
	w.mu.Lock()
	streak := w.tr.streak[sideCoordinator]
	w.mu.Unlock()
	if !streak.IsZero() {
		t.Fatalf("streak restarted at %v by a fetch time seen before", streak.Sub(t0))
	}
	// Without the coordinator side (offsets in ZooKeeper) nothing is noted.
	z, _, _ := watchOnFakeClock(bound, false)
	z.evidence = w.evidence
	z.noteEvidence(at(0))
	fetched = at(20 * time.Second)
	z.noteEvidence(at(21 * time.Second))
	if !z.tr.last[sideCoordinator].IsZero() {
		t.Fatal("a member without the coordinator side noted the coordinator's answer")
	}
}

// TestCoordinatorFetchedEvidence (cluster): once a member committed, the
// broker its commits go to is one its fetcher asks (every broker leads
// some of the topic's partitions), and the times that broker answered
// those fetches reach the watch's evidence and advance: the address the
// offsets store reports and the fetcher's loops' addresses are spelt
// alike.
func TestCoordinatorFetchedEvidence(t *testing.T) {
	const partitions = 2 * testcluster.SharedBrokers
	cons, _ := joinOne(t, partitions, func(c *testcluster.Cluster, topic string) {
		testcluster.MustProduce(t, c, topic, partitions, 0, 2*partitions)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 * partitions {
		select {
		case m := <-cons.Messages():
			m.Ack()
		case <-ctx.Done():
			t.Fatal("the messages were not all read")
		}
	}
	var first time.Time
	testcluster.Await(t, 30*time.Second, 10*time.Millisecond, "the coordinator's broker answering fetches", func() bool {
		first = cons.kafka.evidence().coordinatorAt
		return !first.IsZero()
	})
	if s, _ := cons.store.kafkaStats(); s.Coordinator == "" {
		t.Fatal("no coordinator address after the commits")
	}
	testcluster.Await(t, 30*time.Second, 10*time.Millisecond, "a later answer of the coordinator's broker", func() bool {
		return cons.kafka.evidence().coordinatorAt.After(first)
	})
}

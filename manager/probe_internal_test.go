package manager

import (
	"log/slog"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestKafkaWatchDue: a probe round is due only for a side needed that
// had no answer (probe or the member's own traffic) for an interval, whose
// last probe failed, or while the member is out.
func TestKafkaWatchDue(t *testing.T) {
	const bound = 8 * time.Second // interval 2 s
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	p := newKafkaProbe(sarama.NewConfig(), time.Second, "g", true, func() []string { return nil }, nil)
	w := newKafkaWatch(t0, bound, p, nil)
	if w.interval != 2*time.Second {
		t.Fatalf("interval %v", w.interval)
	}
	var brokers, coord uint64
	w.evidence = func() (uint64, uint64) { return brokers, coord }
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

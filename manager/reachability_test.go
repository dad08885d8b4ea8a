package manager

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/offsets"
)

// TestReachTracker walks the tracker through a cut of the brokers, a
// flapping heal and a stable one, and a coordinator that alone stops
// answering: out only past the bound, back only after answers without a
// failure for the settle window, and next() is the instant the bound
// passes.
func TestReachTracker(t *testing.T) {
	const bound, settle = 6 * time.Second, 1500 * time.Millisecond
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	r := newReachTracker(t0, bound, settle, true)
	step := func(now time.Duration, wantOut, wantChanged bool) {
		t.Helper()
		out, changed := r.update(at(now))
		if out != wantOut || changed != wantChanged {
			t.Fatalf("at %v: out %v changed %v, want %v %v (reason %q)", now, out, changed, wantOut, wantChanged, r.reason)
		}
	}
	both := func(now time.Duration, ok bool) {
		r.note(sideBrokers, ok, at(now))
		r.note(sideCoordinator, ok, at(now))
	}
	both(time.Second, true)
	if got, want := r.next(), at(time.Second+bound+time.Millisecond); !got.Equal(want) {
		t.Fatalf("next %v, want %v", got, want)
	}
	if r.suspect(at(time.Second)) {
		t.Fatal("suspect after answers")
	}
	if !r.suspect(at(time.Second + 2*settle + time.Millisecond)) {
		t.Fatal("not suspect after two settle windows without an answer")
	}
	// Cut from 1s: failures alone do not take it out before the bound.
	for d := 2 * time.Second; d <= 7*time.Second; d += time.Second {
		both(d, false)
		step(d, false, false)
		if !r.suspect(at(d)) {
			t.Fatalf("not suspect at %v after a failed probe", d)
		}
	}
	step(7*time.Second+time.Millisecond, true, true)
	if r.suspect(at(7 * time.Second)) {
		t.Fatal("suspect while out")
	}
	if !strings.Contains(r.reason, "no Kafka broker answered for 6.001s") {
		t.Fatalf("reason %q", r.reason)
	}
	if !r.next().IsZero() {
		t.Fatalf("next while out: %v", r.next())
	}
	// Flapping: one answer, a failure, an answer: not back until an
	// unbroken settle window.
	both(9*time.Second, true)
	step(9*time.Second, true, false)
	both(10*time.Second, false)
	both(10500*time.Millisecond, true)
	step(11*time.Second, true, false)
	step(11999*time.Millisecond, true, false)
	both(12*time.Second, true)
	step(12*time.Second, false, true)
	if r.reason != "" {
		t.Fatalf("reason kept: %q", r.reason)
	}
	// Only the coordinator falls silent.
	for d := 13 * time.Second; d <= 18*time.Second; d += time.Second {
		r.note(sideBrokers, true, at(d))
		r.note(sideCoordinator, false, at(d))
		step(d, false, false)
	}
	step(18*time.Second+time.Millisecond, true, true)
	if !strings.Contains(r.reason, "the group coordinator did not answer for 6.001s") {
		t.Fatalf("reason %q", r.reason)
	}
	// Brokers only matter with zookeeper offset storage.
	z := newReachTracker(t0, bound, settle, false)
	z.note(sideBrokers, true, at(5*time.Second))
	if out, _ := z.update(at(10 * time.Second)); out {
		t.Fatal("out without a needed side silent")
	}
	if out, changed := z.update(at(11*time.Second + time.Millisecond)); !out || !changed {
		t.Fatal("not out with the brokers silent past the bound")
	}
	if got := z.lastAnswer(); !got.Equal(at(5 * time.Second)) {
		t.Fatalf("lastAnswer %v", got)
	}
}

func TestProbeInterval(t *testing.T) {
	for _, tc := range []struct{ bound, want time.Duration }{
		{2 * time.Second, 500 * time.Millisecond},
		{6 * time.Second, 1500 * time.Millisecond},
		{10 * time.Minute, 5 * time.Second},
		{time.Second, 250 * time.Millisecond},
	} {
		if got := probeInterval(tc.bound); got != tc.want {
			t.Errorf("probeInterval(%v) = %v, want %v", tc.bound, got, tc.want)
		}
	}
}

func TestProbeQuiet(t *testing.T) {
	for _, tc := range []struct{ bound, longPoll, want time.Duration }{
		{45 * time.Second, 10 * time.Second, 15 * time.Second}, // the defaults
		{45 * time.Second, 0, 5 * time.Second},                 // no long poll: the interval
		{30 * time.Second, 10 * time.Second, 10 * time.Second}, // a third of the bound
		{2 * time.Second, 10 * time.Second, 666666666},         // a third of the bound
		{time.Second, 10 * time.Second, 333333333},             // a third, over the 250 ms interval
		{8 * time.Second, 500 * time.Millisecond, 2500 * time.Millisecond},
	} {
		if got := probeQuiet(tc.bound, tc.longPoll); got != tc.want {
			t.Errorf("probeQuiet(%v, %v) = %v, want %v", tc.bound, tc.longPoll, got, tc.want)
		}
	}
}

// TestKafkaWatchLongPoll: with the default bound and an idle member's
// fetches answered 10 s apart (the default long poll), by the
// coordinator's broker among others, no probe round is due and the
// member is not suspect; once the answers stop, a round is due 15 s
// after the last (probeQuiet), the member is suspect 5 s later, and out
// only past the bound.
func TestKafkaWatchLongPoll(t *testing.T) {
	const bound = DefaultKafkaUnreachableTimeout
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	p := newKafkaProbe(sarama.NewConfig(), time.Second, "g", true, func() []string { return nil }, nil)
	w := newKafkaWatch(t0, bound, 10*time.Second, p, nil)
	var brokers uint64
	var fetched time.Time
	w.evidence = func() kafkaEvidence { return kafkaEvidence{brokers: brokers, coordinatorAt: fetched} }
	w.noteEvidence(t0)
	// The watch is calm: it ticks once an interval, and the answers come
	// just after a tick (the brokers' counter is then dated a whole
	// interval early, at the tick before it grew).
	tick := w.tickEvery(t0)
	if tick != w.interval {
		t.Fatalf("a calm watch ticks every %v, want the interval %v", tick, w.interval)
	}
	last := time.Duration(0)
	for now := tick; now <= 2*time.Minute; now += tick {
		if (now-tick)%(10*time.Second) == 0 { // the loops' answers, just after the previous tick
			brokers++
			fetched, last = at(now-tick+time.Millisecond), now-tick+time.Millisecond
		}
		w.noteEvidence(at(now))
		if w.due(at(now)) {
			t.Fatalf("probe round due at %v though the fetches were answered at %v", now, last)
		}
		if w.tr.suspect(at(now)) {
			t.Fatalf("suspect at %v though the fetches were answered at %v", now, last)
		}
	}
	// The answers stop.
	if w.due(at(last+10*time.Second)) || w.tr.suspect(at(last+10*time.Second)) {
		t.Fatal("due or suspect a long poll after the last answer")
	}
	if !w.due(at(last + 15*time.Second)) {
		t.Fatal("not due once the long poll and an interval passed without an answer")
	}
	if !w.tr.suspect(at(last + 20*time.Second + time.Millisecond)) {
		t.Fatal("not suspect after the long poll and two intervals without an answer")
	}
	if w.tickEvery(at(last+20*time.Second+time.Millisecond)) != w.interval/2 {
		t.Fatal("a suspect watch does not tick twice an interval")
	}
	if out, _ := w.tr.update(at(last + bound - tick)); out {
		t.Fatal("out before the bound")
	}
	if out, _ := w.tr.update(at(last + bound + time.Millisecond)); !out {
		t.Fatal("not out past the bound")
	}
}

// TestKafkaBoundStore: the wrapper keeps what partition.Manager finds by
// type assertion on the Kafka store (Reset, for seeks), and sends nothing
// once Kafka's last answer is older than the bound.
func TestKafkaBoundStore(t *testing.T) {
	var st store = kafkaBoundStore{store: kafkaStore{&offsets.KafkaStore{}}, w: nil}
	if _, ok := st.(interface {
		Reset(ctx context.Context, topic string, partition int32, next int64) error
	}); !ok {
		t.Fatal("kafkaBoundStore hides Reset")
	}
	w := &kafkaWatch{tr: newReachTracker(time.Now().Add(-time.Minute), 6*time.Second, time.Second, true)}
	s := kafkaBoundStore{store: kafkaStore{&offsets.KafkaStore{}}, w: w}
	if err := s.Commit(context.Background(), "t", 0, 5); !errors.Is(err, ErrKafkaUnreachable) {
		t.Fatalf("Commit past the bound: %v", err)
	}
	for _, err := range s.CommitBatch(context.Background(), []offsets.Offset{{}, {}}) {
		if !errors.Is(err, ErrKafkaUnreachable) {
			t.Fatalf("CommitBatch past the bound: %v", err)
		}
	}
	if err := s.Reset(context.Background(), "t", 0, 5); !errors.Is(err, ErrKafkaUnreachable) {
		t.Fatalf("Reset past the bound: %v", err)
	}
	if _, _, err := s.Fetch(context.Background(), "t", 0); !errors.Is(err, ErrKafkaUnreachable) {
		t.Fatalf("Fetch past the bound: %v", err)
	}
}

// TestKafkaWatchEvidence: answers to the member's own traffic count like
// probe answers (dated at the tick before they were seen), side by side:
// a member whose probes time out while its fetches and commits are
// answered stays in; once the counters stop, it goes out after the bound.
func TestKafkaWatchEvidence(t *testing.T) {
	const bound = 6 * time.Second
	w, _, at := watchOnFakeClock(bound, true)
	var brokers, coord uint64
	w.evidence = func() kafkaEvidence { return kafkaEvidence{brokers: brokers, coordinator: coord} }
	w.noteEvidence(at(0)) // the baseline
	for s := 1; s <= 20; s++ {
		brokers += 5
		coord++
		w.noteEvidence(at(time.Duration(s) * time.Second))
		if out, _ := w.tr.update(at(time.Duration(s) * time.Second)); out {
			t.Fatalf("out at %ds while the member's traffic is answered: %s", s, w.tr.reason)
		}
	}
	// The coordinator stops answering; the brokers still do.
	for s := 21; s <= 28; s++ {
		brokers += 5
		w.noteEvidence(at(time.Duration(s) * time.Second))
	}
	out, _ := w.tr.update(at(28 * time.Second))
	if !out || !strings.Contains(w.tr.reason, "coordinator") {
		t.Fatalf("coordinator silent for 8s (bound 6s): out %v, reason %q", out, w.tr.reason)
	}
}

// TestStoreLayersPassOn: what the consumer needs of the offsets store
// beside requests comes through the reachability layer, so nothing keeps
// the store underneath: the Kafka store's counters through
// kafkaBoundStore, none and no hold with offsets in ZooKeeper (where the
// final commits are not held, and a partition's end expects nothing).
func TestStoreLayersPassOn(t *testing.T) {
	var st store = kafkaBoundStore{store: kafkaStore{&offsets.KafkaStore{}}}
	if _, ok := st.kafkaStats(); !ok {
		t.Fatal("kafkaBoundStore hides the Kafka store's counters")
	}
	st = zooKeeperStore{}
	if _, ok := st.kafkaStats(); ok {
		t.Fatal("the ZooKeeper store claims Kafka counters")
	}
	if h := st.hold(2); h != nil {
		t.Fatalf("the ZooKeeper store holds: %v", h)
	}
	var f finalCommits
	tp := TopicPartition{Topic: "t", Partition: 0}
	f.begin(st, []TopicPartition{tp})
	if f.hold != nil || f.waiting != nil {
		t.Fatalf("final commits held over ZooKeeper: hold %v, waiting %v", f.hold, f.waiting)
	}
	f.done(tp)
	f.release()
}

// watchOnFakeClock returns a Kafka watch begun at t0 whose probe asks no
// broker (coordinator: it needs the coordinator side too), for tests that
// pass the time themselves, and the time d after t0.
func watchOnFakeClock(bound time.Duration, coordinator bool) (w *kafkaWatch, t0 time.Time, at func(d time.Duration) time.Time) {
	t0 = time.Unix(1000, 0)
	p := newKafkaProbe(sarama.NewConfig(), time.Second, "g", coordinator, func() []string { return nil }, nil)
	return newKafkaWatch(t0, bound, 0, p, nil), t0, func(d time.Duration) time.Time { return t0.Add(d) }
}

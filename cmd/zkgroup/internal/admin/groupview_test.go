package admin

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

func testView() GroupView {
	return GroupView{Subscription: "static:t", Members: []string{"i1", "i2"}, Topics: []string{"t"},
		Partitions: []TopicPartition{{"t", 0}, {"t", 1}, {"t", 2}},
		Owners:     map[TopicPartition]string{{"t", 0}: "i1", {"t", 1}: "gone"}}
}

// TestViewerNoTopicWarning: the warning comes once when the subscription
// matches nothing, an info line when it matches again.
func TestViewerNoTopicWarning(t *testing.T) {
	var buf testcluster.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var mu sync.Mutex
	topics := []string{}
	v := NewViewer(func() (GroupView, error) {
		mu.Lock()
		defer mu.Unlock()
		return GroupView{Subscription: "static:orders", Topics: append([]string{}, topics...)}, nil
	}, time.Second, log)
	if _, _, err := v.Last(); err != nil {
		t.Fatal(err)
	}
	if _, ok := v.Fresh(); ok {
		t.Fatal("fresh before any read")
	}
	for range 3 {
		if _, err := v.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(buf.String(), "the subscription matches no topic"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "subscription=static:orders") {
		t.Fatalf("warning: %s", buf.String())
	}
	mu.Lock()
	topics = []string{"orders"}
	mu.Unlock()
	view, err := v.Refresh(t.Context())
	if err != nil || len(view.Topics) != 1 || !strings.Contains(buf.String(), "matches topics again") {
		t.Fatalf("%v %v\n%s", view, err, buf.String())
	}
}

// TestViewerFailedRead: a failed read keeps the last view and reports the
// error; a read that outlasts ctx goes on.
func TestViewerFailedRead(t *testing.T) {
	fail := errors.New("zk down")
	release := make(chan struct{})
	calls := 0
	v := NewViewer(func() (GroupView, error) {
		calls++
		switch calls {
		case 1:
			return testView(), nil
		case 2:
			return GroupView{}, fail
		}
		<-release
		return testView(), nil
	}, time.Second, nil)
	_, _ = v.Refresh(t.Context())
	if _, err := v.Refresh(t.Context()); !errors.Is(err, fail) {
		t.Fatalf("err %v", err)
	}
	view, at, err := v.Last()
	if len(view.Members) != 2 || at.IsZero() || !errors.Is(err, fail) {
		t.Fatalf("last %v %v %v", view, at, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := v.Refresh(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("refresh with a done ctx: %v", err)
	}
	close(release)
	if _, err := v.Refresh(t.Context()); err != nil { // joins the read under way
		t.Fatal(err)
	}
}

func TestGroupViewStatus(t *testing.T) {
	gs := NewGroupViewStatus(testView(), time.Unix(100, 0), nil, "i1")
	if len(gs.Members) != 3 || gs.Members[2].ID != "gone" || gs.Members[2].Registered || !gs.Members[0].This ||
		len(gs.Members[0].Partitions) != 1 || len(gs.Members[1].Partitions) != 0 || len(gs.Unowned) != 1 ||
		gs.Unowned[0] != (TopicPartition{"t", 2}) || gs.ReadAt == nil {
		t.Fatalf("%+v", gs)
	}
}

func TestReadiness(t *testing.T) {
	none := &GroupView{Subscription: "static:nope"}
	some := &GroupView{Subscription: "static:t", Topics: []string{"t"}}
	idle := stats()
	idle.Assigned, idle.Partitions = nil, nil
	suspended := stats()
	suspended.Partitions[1].Suspended = true
	rebalancing := stats()
	rebalancing.Ready = false
	rebalancing.Partitions = rebalancing.Partitions[:1]
	out := stats()
	out.Ready, out.Assigned, out.Partitions = false, nil, nil
	out.KafkaUnreachable, out.KafkaUnreachableSince = true, time.Date(2026, 12, 1, 14, 5, 39, 0, time.UTC)
	out.KafkaUnreachableReason = "no Kafka broker answered for 6.002s (bound 6s)"
	mismatch := stats()
	mismatch.StrategyMismatches = []string{"b"}
	mismatch.StrategyConflicts = []manager.StrategyMismatchError{{Member: "a", Strategy: "balanced", Peer: "b", PeerStrategy: "range", Oldest: "b", InForce: "range"}}
	old := stats()
	old.IncompatibleMembers = []manager.IncompatibleMemberError{{Member: "a", Strategy: "range", Peer: "g_h-1-aaaa",
		Reason: "it registers 2 streams", Differ: 1, Partitions: []manager.TopicPartition{{Topic: "t", Partition: 2}}}}
	for _, tc := range []struct {
		name   string
		st     manager.Stats
		joined bool
		view   *GroupView
		ready  bool
		reason string
	}{
		{"joining", manager.Stats{}, false, nil, false, "joining the group"},
		{"ready", stats(), true, some, true, "ready: 2 partitions fetching"},
		{"suspended", suspended, true, nil, false, "1 partitions suspended (waiting for the zookeeper session): t/1"},
		{"rebalancing", rebalancing, true, nil, false, "rebalancing: 1 of 2 assigned partitions not fetching yet: t/1"},
		{"out for kafka", out, true, some, false, "out of the group since 2026-12-01T14:05:39Z: no Kafka broker answered for 6.002s (bound 6s); partitions stopped without a commit, joining again once Kafka answers"},
		{"strategy mismatch", mismatch, true, some, false, `strategy mismatch: this member a is configured with "balanced", b publishes "range"; every member computes with "range", the strategy of the oldest member b; configure every member with one strategy`},
		{"old consumer", old, true, some, false, `incompatible member: g_h-1-aaaa publish no strategy (Kafka's old high-level consumer?) and would not agree with "range" on 1 partitions: it registers 2 streams`},
		{"no topic", idle, true, none, false, "subscription matches no topic (static:nope)"},
		{"idle member", idle, true, some, true, "ready: no partition assigned (2 members share the partitions)"},
		{"idle, view unknown", idle, true, nil, true, "ready: no partition assigned"},
	} {
		ready, reason := Readiness(tc.st, tc.joined, tc.view)
		if ready != tc.ready || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: %v %q, want %v %q", tc.name, ready, reason, tc.ready, tc.reason)
		}
	}
}

func TestLiveness(t *testing.T) {
	l := NewLiveness(10 * time.Second)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	l.Beat("daemon")
	l.Beat("manager")
	now = now.Add(5 * time.Second)
	l.Beat("daemon")
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(6 * time.Second)
	err := l.Check()
	if err == nil || !strings.Contains(err.Error(), "manager loop silent for 11s") || strings.Contains(err.Error(), "daemon") {
		t.Fatalf("%v", err)
	}
	if got := l.Loops(); len(got) != 2 || got[0] != "daemon" {
		t.Fatalf("loops %v", got)
	}
}

// TestViewerAway: a member away keeps the time a view first showed it
// across reads, is forgotten once a view no longer shows it (a new
// absence starts anew), and /status's group view carries it with its
// grace and marker time.
func TestViewerAway(t *testing.T) {
	var mu sync.Mutex
	var away []AwayMember
	written := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	v := NewViewer(func() (GroupView, error) {
		mu.Lock()
		defer mu.Unlock()
		view := testView()
		view.Away = append([]AwayMember(nil), away...)
		return view, nil
	}, time.Second, nil)
	set := func(a ...AwayMember) { mu.Lock(); away = a; mu.Unlock() }
	read := func() GroupView {
		view, err := v.Refresh(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return view
	}
	set(AwayMember{ID: "i3", Grace: 10 * time.Second, MarkerWritten: written})
	first := read().Away[0].Seen
	if first.IsZero() {
		t.Fatal("Seen not set")
	}
	time.Sleep(2 * time.Millisecond) // clocks of a coarse resolution
	if again := read().Away[0].Seen; !again.Equal(first) {
		t.Errorf("Seen moved from %v to %v between two reads showing i3 away", first, again)
	}
	gs := NewGroupViewStatus(read(), time.Now(), nil, "i1")
	if len(gs.Away) != 1 || gs.Away[0].ID != "i3" || gs.Away[0].Grace != "10s" || gs.Away[0].GraceSeconds != 10 ||
		gs.Away[0].MarkerWritten == nil || !gs.Away[0].MarkerWritten.Equal(written) || gs.Away[0].FirstSeen == nil ||
		!gs.Away[0].FirstSeen.Equal(first) {
		t.Errorf("status away: %+v", gs.Away)
	}
	set()
	if n := len(read().Away); n != 0 {
		t.Fatalf("%d away after i3 came back", n)
	}
	set(AwayMember{ID: "i3", Grace: 10 * time.Second})
	if again := read().Away[0].Seen; !again.After(first) {
		t.Errorf("i3 away again: Seen %v, not after the first absence's %v", again, first)
	}
	if gs := NewGroupViewStatus(testView(), time.Now(), nil, "i1"); gs.Away == nil || len(gs.Away) != 0 {
		t.Errorf("no member away: %#v, want an empty list", gs.Away)
	}
}

package manager_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"go.uber.org/goleak"
)

// closedInOrder receives from msgs until it is closed, acking what comes,
// and checks the closing order: Messages, then Errors, then Done, and
// that Messages stays closed (a second receive says so at once).
func closedInOrder(t *testing.T, cons *manager.Consumer, msgs <-chan *manager.Message, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for open := true; open; {
		select {
		case m, ok := <-msgs:
			if !ok {
				open = false
				break
			}
			cons.Ack(m)
		case <-deadline:
			t.Fatalf("Messages not closed within %v", within)
		}
	}
	select {
	case <-cons.Done():
		// Done comes last; Errors() must be closed by now too.
	default:
	}
	for range cons.Errors() { // closed after Messages, before Done
	}
	select {
	case <-cons.Done():
	case <-time.After(within):
		t.Fatalf("Done not closed within %v after Messages and Errors", within)
	}
	if m, ok := <-msgs; ok {
		t.Errorf("Messages gave %s/%d@%d after it was closed", m.Topic, m.Partition, m.Offset)
	}
	if cons.Messages() != msgs {
		t.Error("Messages returned another channel after it was closed")
	}
}

// TestMessagesStopPaths: Messages is closed exactly once on every path by
// which the consumer stops (Close, Close twice, Interrupt, a context's end
// turned into Interrupt, a failure: CloseTimeout passing with a message
// unacked), after Errors() was last written and before Done(); Err says
// why; no goroutine is left.
func TestMessagesStopPaths(t *testing.T) {
	c := testcluster.Shared(t)
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, cons *manager.Consumer, cancel context.CancelFunc)
		fail bool
	}{
		{"close", func(t *testing.T, cons *manager.Consumer, _ context.CancelFunc) {
			if err := cons.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}, false},
		{"close-twice", func(t *testing.T, cons *manager.Consumer, _ context.CancelFunc) {
			if err := cons.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := cons.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		}, false},
		{"interrupt", func(t *testing.T, cons *manager.Consumer, _ context.CancelFunc) { cons.Interrupt() }, false},
		{"ctx", func(t *testing.T, cons *manager.Consumer, cancel context.CancelFunc) { cancel() }, false},
		{"failure", func(t *testing.T, cons *manager.Consumer, _ context.CancelFunc) {
			if err := cons.Close(); err == nil {
				t.Error("Close returned nil with a drain cut short by CloseTimeout")
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, group, sub := newTopic(t, c, 2)
			testcluster.MustProduce(t, c, topic, 2, 0, 100)
			ignore := goleak.IgnoreCurrent()
			cfg := apiConfig(t)
			if tc.fail {
				cfg.CloseTimeout = 2 * time.Second
				cfg.Partition.DrainTimeout = time.Minute
			}
			cons := mustJoin(t, c, group, sub, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stopOnCtx := context.AfterFunc(ctx, cons.Interrupt) // the documented way to stop on a context
			defer stopOnCtx()
			msgs := cons.Messages()
			for i := 0; i < 10; i++ {
				select {
				case m := <-msgs:
					if !tc.fail || i < 9 {
						cons.Ack(m) // with fail, the 10th stays unacked
					}
				case <-time.After(30 * time.Second):
					t.Fatal("no message within 30s")
				}
			}
			if err := cons.Err(); err != nil {
				t.Errorf("Err while running: %v", err)
			}
			stopped := make(chan struct{})
			go func() { defer close(stopped); tc.stop(t, cons, cancel) }()
			if tc.fail {
				<-stopped // Close returns after CloseTimeout; nobody reads meanwhile
			}
			closedInOrder(t, cons, msgs, 60*time.Second)
			<-stopped
			err := cons.Err()
			switch {
			case tc.fail && err == nil:
				t.Error("Err is nil after a drain was cut short")
			case !tc.fail && err != nil:
				t.Errorf("Err after a clean stop: %v", err)
			}
			if cerr := cons.Close(); (cerr != nil) != tc.fail {
				t.Errorf("Close after the stop: %v", cerr)
			}
			goleak.VerifyNone(t, ignore, leakOpts)
		})
	}
}

// TestMessagesUnreadClose: a receiver that stopped reading (messages
// waiting in the channel, nothing received since) holds Close up no longer
// than DrainTimeout: what waits in the channel is drained like any
// handed-out message, then taken back, never received; what was received
// and acked is committed, nothing more.
func TestMessagesUnreadClose(t *testing.T) {
	c := testcluster.Shared(t)
	topic, group, sub := newTopic(t, c, 2)
	testcluster.MustProduce(t, c, topic, 2, 0, 200)
	cfg := apiConfig(t)
	cfg.Partition.DrainTimeout = 3 * time.Second
	cfg.CloseTimeout = 2 * time.Minute
	cons := mustJoin(t, c, group, sub, cfg)
	msgs := cons.Messages()
	got := map[int32]int64{}
	for i := 0; i < 20; i++ {
		m := <-msgs
		cons.Ack(m)
		got[m.Partition] = m.Offset + 1
	}
	await(t, 30*time.Second, "the channel full again", func() bool { return len(msgs) == manager.MessagesBuffer })
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- cons.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(cfg.Partition.DrainTimeout + 30*time.Second):
		t.Fatalf("Close still waiting %v after it began, with DrainTimeout %v and nobody reading", time.Since(start), cfg.Partition.DrainTimeout)
	}
	t.Logf("Close with %d messages unread took %v (DrainTimeout %v)", manager.MessagesBuffer, time.Since(start), cfg.Partition.DrainTimeout)
	if m, ok := <-msgs; ok {
		t.Errorf("Messages gave %s/%d@%d after Close returned; what was not taken must be taken back", m.Topic, m.Partition, m.Offset)
	}
	commits := committed(t, c, group, topic, 2)
	for p, next := range got {
		if commits[p] != next {
			t.Errorf("partition %d: committed %d, want %d (the received and acked messages, nothing more)", p, commits[p], next)
		}
	}
}

// TestMessagesGroupJoinLeave: three members receiving from Messages over
// 24 partitions join and leave one by one under load: no message of a
// partition is received by a member that does not hold it (after its
// OnRevoked), nothing is lost and nothing received twice across the clean
// handoffs, and the commits end at the log-end offsets.
func TestMessagesGroupJoinLeave(t *testing.T) {
	groupJoinLeave(t, joinOpts{strict: true, shuffle: true, ackDelay: 200 * time.Microsecond, messages: true})
}

// TestMessagesSessionFaults: members receiving from Messages, one cut off
// from ZooKeeper (its session suspended, then expired: OnLost) and one
// stalled past its session timeout. Nothing is received by a member while
// its session is suspended, no message of a lost partition is received
// after OnLost (the holder check), and nothing is lost.
func TestMessagesSessionFaults(t *testing.T) {
	c := testcluster.Start(t, testcluster.Brokers(1))
	const parts = 12
	topic, group, sub := newTopicRF(t, c, parts, 1)
	rec := newRecorder(t)
	// A cut-off member learns of its expiry only once it reaches
	// ZooKeeper again: the others are assigned its partitions before its
	// OnLost. The check is then on what is received: nothing of a
	// partition another member holds.
	ins, proxies := joinProxied(t, c, group, sub, rec, []string{"a", "b", "c"}, func(name string) joinOpts {
		return joinOpts{strict: true, messages: true, configure: func(cfg *manager.Config) { ownerHooks(rec, name, cfg) }}
	})
	a, b, cc := ins[0], ins[1], ins[2]
	await(t, 60*time.Second, "3 balanced", func() bool { return balanced(parts, a, b, cc) })
	prod := testcluster.StartProducer(t, c, topic, parts, 0, 24, 50*time.Millisecond)
	await(t, 60*time.Second, "c receiving", func() bool { return rec.By("c") > 0 })

	// c is cut off: once its session is suspended it receives nothing,
	// while a and b take its partitions over after the expiry.
	proxies["c"].Block()
	await(t, 30*time.Second, "c suspended", func() bool { return !cc.c.Stats().SessionHealthy })
	cut := rec.By("c")
	await(t, 60*time.Second, "a, b take over from c", func() bool { return balanced(parts, a, b) })
	if n := rec.By("c"); n != cut {
		t.Errorf("c received %d messages while its session was suspended", n-cut)
	}
	proxies["c"].Unblock()
	await(t, 60*time.Second, "c back", func() bool { return balanced(parts, a, b, cc) })

	// b stalls past its session timeout: its partitions are lost (OnLost);
	// the holder check fails on any of them received by b after that.
	proxies["b"].Stall()
	await(t, 30*time.Second, "b suspended", func() bool { return !b.c.Stats().SessionHealthy })
	stalled := rec.By("b")
	await(t, 60*time.Second, "a, c take over from b", func() bool {
		sa, sc := a.c.Stats(), cc.c.Stats()
		return len(sa.Members) == 2 && len(sc.Members) == 2 && len(sa.Partitions)+len(sc.Partitions) == parts && sa.Ready && sc.Ready
	})
	if n := rec.By("b"); n != stalled {
		t.Errorf("b received %d messages while its session was suspended", n-stalled)
	}
	proxies["b"].Resume()
	await(t, 60*time.Second, "b back after expiry", func() bool { return balanced(parts, a, b, cc) })
	if rec.lostBy("b") == 0 || rec.lostBy("c") == 0 {
		t.Errorf("OnLost reported %d partitions of b and %d of c; want some of each", rec.lostBy("b"), rec.lostBy("c"))
	}
	n := prod.Halt(t)
	await(t, 90*time.Second, "every message consumed", func() bool { return rec.Count(topic, n) == n })
	rec.checkViolations(t)
}

// TestMessagesModePartitions: Messages on a consumer in ModePartitions is
// not silently empty: the channel is closed at once, ErrMode comes on
// Errors() and from Err, and the consumer goes on (EachPartition works).
func TestMessagesModePartitions(t *testing.T) {
	c := testcluster.Shared(t)
	topic, group, sub := newTopic(t, c, 2)
	testcluster.MustProduce(t, c, topic, 2, 0, 10)
	cfg := apiConfig(t)
	cfg.Mode = manager.ModePartitions
	cons := mustJoin(t, c, group, sub, cfg)
	defer cons.Close()
	if _, ok := <-cons.Messages(); ok {
		t.Fatal("Messages gave a message in ModePartitions")
	}
	if err := cons.Err(); !errors.Is(err, manager.ErrMode) {
		t.Errorf("Err after Messages in ModePartitions: %v; want ErrMode", err)
	}
	select {
	case err := <-cons.Errors():
		if !errors.Is(err, manager.ErrMode) {
			t.Errorf("Errors(): %v; want ErrMode", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("no ErrMode on Errors()")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ps, err := range cons.EachPartition(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got := false
		for range ps.Each(ctx) {
			got = true
			break
		}
		if !got {
			t.Fatal("the stream ended without a message")
		}
		break
	}
}

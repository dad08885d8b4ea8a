package zkconn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connectedSideConn is a sideConn on client, with log, past the connect
// reply (which server sends); the frames written on it come on written,
// closed once the connection is. The test's end closes it.
func connectedSideConn(t *testing.T, client, server net.Conn, log *pingLog) (*sideConn, <-chan []byte) {
	t.Helper()
	sc := newSideConn(client, 1<<20, log, nil)
	t.Cleanup(func() { sc.Close() })
	go server.Write(append(binary.BigEndian.AppendUint32(nil, 4), 0, 0, 0, 0))
	if _, err := readFrame(sc, 8); err != nil {
		t.Fatal(err)
	}
	written := make(chan []byte, 8)
	go func() {
		defer close(written)
		for {
			f, err := readFrame(server, 1<<16)
			if err != nil {
				return
			}
			written <- f
		}
	}()
	return sc, written
}

// TestSideConnCreditsPings: a ping reply renews the lease from the send
// time of the oldest ping unanswered on the connection, go-zookeeper's
// (written through Write) and the Session's own (ping) alike, in the
// order written; replies to other requests, and a ping reply with no
// ping noted, renew nothing; every reply still reaches go-zookeeper.
func TestSideConnCreditsPings(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	var (
		mu       sync.Mutex
		clock    int64 = 100
		credited []int64
	)
	log := newPingLog(func() int64 { clock++; return clock }, func(sent int64) {
		mu.Lock()
		credited = append(credited, sent)
		mu.Unlock()
	})
	sc, written := connectedSideConn(t, client, server, log)
	// go-zookeeper's ping (noted at 101), a read, the Session's ping (102).
	if _, err := sc.Write(pingFrame); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Write(packet(1, opGetData, 4)); err != nil {
		t.Fatal(err)
	}
	sc.ping(time.Now().Add(5 * time.Second))
	for i, want := range [][]byte{pingFrame, packet(1, opGetData, 4), pingFrame} {
		if got := <-written; !bytes.Equal(got, want[4:]) {
			t.Fatalf("frame %d on the wire: %x; want %x", i, got, want[4:])
		}
	}
	// go-zookeeper's pings are told apart (the monitor times its own
	// around them).
	if last, theirs := log.lastPings(); last != 102 || theirs != 101 {
		t.Fatalf("latest ping noted at %d, go-zookeeper's at %d; want 102 and 101", last, theirs)
	}

	creditedNow := func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(credited)
	}
	replies := []struct {
		frame []byte
		want  []int64 // credited once it was read
	}{
		{frameOf(1, []byte("data")), nil},
		{frameOf(pingXid, nil), []int64{101}},
		{frameOf(pingXid, nil), []int64{101, 102}},
		{frameOf(pingXid, nil), []int64{101, 102}}, // no ping unanswered
	}
	for i, r := range replies {
		go server.Write(r.frame)
		got, err := readFrame(sc, 3)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, r.frame[4:]) {
			t.Fatalf("reply %d read as %x; want %x", i, got, r.frame[4:])
		}
		if c := creditedNow(); !slices.Equal(c, r.want) {
			t.Fatalf("after reply %d: credited %v; want %v", i, c, r.want)
		}
	}
	if isPing(packet(pingXid, opGetData, 0)) || !isPing(pingFrame) {
		t.Fatal("isPing: a ping is a 12-byte frame of xid -2 and opcode 11")
	}
}

// TestPingLogBounded: past maxUnansweredPings unanswered, a connection's
// pings are no longer credited (the pairing of replies with pings could
// no longer be told), not even those written later.
func TestPingLogBounded(t *testing.T) {
	var clock int64
	credits := 0
	l := newPingLog(func() int64 { clock++; return clock }, func(int64) { credits++ })
	for range maxUnansweredPings + 1 {
		l.written()
	}
	l.replied()
	l.written()
	l.replied()
	if credits != 0 {
		t.Fatalf("%d credits after %d unanswered pings; want none", credits, maxUnansweredPings+1)
	}
	var nilLog *pingLog
	nilLog.written()
	nilLog.replied()
}

// TestSideConnQuietAfterClose: once go-zookeeper wrote the session's
// close request (the connection is then half-closed), neither a ping nor
// a side request of the Session's own is written after it.
func TestSideConnQuietAfterClose(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	sc, written := connectedSideConn(t, client, server, newPingLog(func() int64 { return 1 }, func(int64) {}))
	closeReq := packet(7, opCloseSession, 0)
	if _, err := sc.Write(closeReq); err != nil {
		t.Fatal(err)
	}
	sc.ping(time.Now().Add(time.Second))
	x := nextSideXid()
	if _, err := sc.send(x, packet(x, opMultiRead, 4), time.Now().Add(time.Second)); !errors.Is(err, errSideClosed) {
		t.Errorf("a side request after the close request: %v; want errSideClosed", err)
	}
	client.Close()
	var frames [][]byte
	for f := range written {
		frames = append(frames, f)
	}
	if len(frames) != 1 || !bytes.Equal(frames[0], closeReq[4:]) {
		t.Fatalf("frames on the wire %x; want the close request alone", frames)
	}
}

// TestCheckDelayFollowsGoZookeeper simulates an idle session: go-zookeeper
// pings every T/3 (each a little late, as a ticker's receiver is), the
// monitor sleeps checkDelay and pings when pingDue says, every ping
// answered at once, for both ping intervals (pingEvery). In the steady
// state the monitor wakes once per go-zookeeper period, and a ping goes
// every T/6 at most while the lease is in use; while it is not, every
// ping is go-zookeeper's. Once go-zookeeper stops pinging, no gap exceeds
// 3T/8 (in use) or 5T/12 (not), and the monitor pings every interval.
func TestCheckDelayFollowsGoZookeeper(t *testing.T) {
	const T = 10 * time.Second
	for _, mode := range []struct {
		name             string
		every, firstStop time.Duration // the interval, and the longest gap once go-zookeeper stopped
	}{{"in use", T / 6, 3 * T / 8}, {"not in use", T / 3, 5 * T / 12}} {
		for _, phase := range []time.Duration{0, T / 24, T / 12, T / 7, T / 6, T / 5, T / 4, T/3 - time.Millisecond} {
			var (
				now, lastPing, theirs time.Duration
				nextTheirs            = phase
				wake                  time.Duration // the monitor's next wake
				wakes, pings, ours    int
				maxGap, maxGapAfter   time.Duration
			)
			theirs = -1
			stopAt := 300 * T / 3 // go-zookeeper stops pinging here
			ping := func(at time.Duration) {
				if lastPing > 0 || at > 0 {
					gap := at - lastPing
					if at < stopAt && at > 2*T {
						maxGap = max(maxGap, gap)
					}
					if at > stopAt+T {
						maxGapAfter = max(maxGapAfter, gap)
					}
					if at >= stopAt && at < stopAt+T && gap > mode.firstStop {
						t.Errorf("%s, phase %v: a gap of %v after go-zookeeper stopped, over %v", mode.name, phase, gap, mode.firstStop)
					}
				}
				lastPing = at
				pings++
			}
			for now < stopAt+3*T {
				if nextTheirs < stopAt && nextTheirs <= wake {
					now = nextTheirs
					ping(now)
					theirs = now
					// A ticker's receiver runs a little late, never early.
					nextTheirs += T/3 + time.Duration(now%7)*time.Microsecond
					continue
				}
				now = wake
				if now > 2*T && now < stopAt {
					wakes++
				}
				if pingDue(T, mode.every, now-lastPing) {
					if now > 2*T && now < stopAt {
						ours++
					}
					ping(now)
				}
				since := time.Duration(-1)
				if theirs >= 0 {
					since = now - theirs
				}
				wake = now + checkDelay(T, mode.every, now-lastPing, now-lastPing, since)
			}
			periods := int((stopAt - 2*T) / (T / 3))
			if maxGap > mode.every+time.Millisecond {
				t.Errorf("%s, phase %v: a gap of %v between pings in the steady state, over %v", mode.name, phase, maxGap, mode.every)
			}
			if wakes > periods+2 {
				t.Errorf("%s, phase %v: the monitor woke %d times in %d periods of go-zookeeper's; want one per period", mode.name, phase, wakes, periods)
			}
			if mode.every == T/3 && ours > 0 {
				t.Errorf("%s, phase %v: the monitor pinged %d times while go-zookeeper did; want none", mode.name, phase, ours)
			}
			if maxGapAfter > mode.every+time.Millisecond {
				t.Errorf("%s, phase %v: a gap of %v between the monitor's own pings, over %v", mode.name, phase, maxGapAfter, mode.every)
			}
		}
	}
}

// TestCheckDelayLease: the monitor wakes at the lease's end when that is
// sooner than a ping due, and after T/12 when a ping was due.
func TestCheckDelayLease(t *testing.T) {
	const T = 12 * time.Second
	if d := checkDelay(T, T/6, 0, T*2/3-time.Second, -1); d != time.Second {
		t.Errorf("lease ends in 1s: slept %v", d)
	}
	if d := checkDelay(T, T/6, T/6, T/6, T/6); d != T/12 {
		t.Errorf("a ping due: slept %v, want T/12", d)
	}
	if d := checkDelay(T, T/6, time.Second, time.Second, -1); d != T/6-time.Second {
		t.Errorf("no go-zookeeper ping known: slept %v, want T/6 past the last ping", d)
	}
}

// TestPingEveryFollowsLeaseUse: the monitor pings every T/6 when Lease
// was called since it last looked, every T/3 (go-zookeeper's own pings
// alone) when not, and every T/6 in plain mode, where go-zookeeper's pings
// renew no lease.
func TestPingEveryFollowsLeaseUse(t *testing.T) {
	const T = 12 * time.Second
	s := &Session{}
	if got := s.pingEvery(T); got != T/3 {
		t.Fatalf("no Lease call: every %v, want T/3", got)
	}
	s.Lease()
	s.Lease()
	if got := s.pingEvery(T); got != T/6 {
		t.Fatalf("after Lease calls: every %v, want T/6", got)
	}
	if got := s.pingEvery(T); got != T/3 {
		t.Fatalf("no Lease call since the last look: every %v, want T/3", got)
	}
	s.plain = true
	if got := s.pingEvery(T); got != T/6 {
		t.Fatalf("plain mode: every %v, want T/6", got)
	}
}

// TestPingAnsweredMovesOnlyAFreshIdleWake: an answered ping moves the
// monitor's wake (due in 50 ms here) to the next check (seconds away)
// only while the monitor keeps the idle schedule, Lease was not called
// since, the session is healthy and the answered ping was sent less than
// a sixth of the timeout ago; in every other case the wake stays due.
func TestPingAnsweredMovesOnlyAFreshIdleWake(t *testing.T) {
	const timeout = 6 * time.Second
	cases := []struct {
		name                string
		idle, used, healthy bool
		answeredAgo         time.Duration
		moved               bool
	}{
		{"idle, fresh", true, false, true, 10 * time.Millisecond, true},
		{"in use since", true, true, true, 10 * time.Millisecond, false},
		{"busy schedule", false, false, true, 10 * time.Millisecond, false},
		{"suspended", true, false, false, 10 * time.Millisecond, false},
		{"answer to an old ping", true, false, true, timeout / 6, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Session{cfg: Config{SessionTimeout: timeout}, negotiated: &atomic.Int64{}, lastAnswered: &atomic.Int64{},
				base: time.Now().Add(-time.Minute), lines: &connLine{}}
			s.lastAnswered.Store(s.now() - int64(c.answeredAgo))
			s.idle, s.wake = c.idle, time.NewTimer(50*time.Millisecond)
			defer s.wake.Stop()
			s.leaseUsed.Store(c.used)
			s.healthy.Store(c.healthy)
			s.pingAnswered()
			select {
			case <-s.wake.C:
				if c.moved {
					t.Error("the wake stayed due; want it moved to the next check")
				}
			case <-time.After(500 * time.Millisecond): // a moved wake is 1 s away or more
				if !c.moved {
					t.Error("the wake was moved; want it left due")
				}
			}
		})
	}
}

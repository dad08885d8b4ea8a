package zkconn

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZooKeeper's ping: a request header alone, xid -2 and opcode 11; the
// server answers it with a reply header of xid -2.
const (
	pingXid = -2
	opPing  = 11
	// pingFrameLen is a ping's frame as go-zookeeper v1.0.4 writes it:
	// the 4-byte length (8), the xid and the opcode.
	pingFrameLen = 12
	// maxUnansweredPings bounds pingLog: go-zookeeper pings every third
	// of the timeout and drops a connection that read nothing for 2/3 of
	// it, so a handful are ever outstanding. Past the bound the
	// connection's pings are no longer credited.
	maxUnansweredPings = 64
)

// pingFrame is a ping's whole frame.
var pingFrame = func() []byte {
	b := binary.BigEndian.AppendUint32(nil, pingFrameLen-4)
	xid := int32(pingXid)
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	return binary.BigEndian.AppendUint32(b, opPing)
}()

// isPing reports whether p, one whole request frame, is a ping.
func isPing(p []byte) bool {
	return len(p) == pingFrameLen && int32(binary.BigEndian.Uint32(p[4:8])) == pingXid &&
		binary.BigEndian.Uint32(p[8:12]) == opPing
}

// pingLog credits the pings written on one connection to the lease:
// go-zookeeper v1.0.4 pings every third of the session timeout whatever
// else it sends, and the Session's monitor pings in between, both as
// plain pings. ZooKeeper answers a session's requests in order and every
// ping with xid -2, so the n-th ping reply read on a connection answers
// the n-th ping written on it: the reply renews the lease from that
// ping's send time, as an answer to any other request does. Writes note
// the send time before the ping goes out, under the connection's write
// lock (so in wire order); the reader credits. Safe for concurrent use;
// a nil *pingLog notes and credits nothing.
type pingLog struct {
	now      func() int64     // the Session's clock (Session.now)
	answered func(sent int64) // Session.answeredAt

	mu     sync.Mutex
	sent   []int64 // send times of the pings not answered yet, oldest first
	lost   bool    // more than maxUnansweredPings: no more credit on this connection
	last   int64   // send time of the latest ping written; 0: none
	theirs int64   // send time of go-zookeeper's latest ping; 0: none yet
}

func newPingLog(now func() int64, answered func(int64)) *pingLog {
	return &pingLog{now: now, answered: answered}
}

// written notes that a ping of the Session's is about to be written. The
// caller holds the connection's write lock until the write is done.
func (l *pingLog) written() { l.note(false) }

// writtenTheirs is written for a ping of go-zookeeper's.
func (l *pingLog) writtenTheirs() { l.note(true) }

func (l *pingLog) note(theirs bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = l.now()
	if theirs {
		l.theirs = l.last
	}
	if l.lost {
		return
	}
	if len(l.sent) == maxUnansweredPings {
		l.lost, l.sent = true, nil
		return
	}
	l.sent = append(l.sent, l.last)
}

// lastPings returns the send times of the latest ping written, answered
// or not (last), and of go-zookeeper's latest (theirs), 0 when none was.
func (l *pingLog) lastPings() (last, theirs int64) {
	if l == nil {
		return 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.theirs
}

// replied credits a ping reply to the oldest ping unanswered. A reply
// with no ping noted (one written before the log began, or after it was
// lost) renews nothing.
func (l *pingLog) replied() {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.lost || len(l.sent) == 0 {
		l.mu.Unlock()
		return
	}
	sent := l.sent[0]
	l.sent = l.sent[1:]
	if len(l.sent) == 0 {
		l.sent = l.sent[:0:0] // the queue's array is not kept growing
	}
	l.mu.Unlock()
	l.answered(sent)
}

// monitor follows go-zookeeper's session events and keeps Status
// current. It pings ZooKeeper whenever no request sent in the last
// interval (pingEvery) was answered and no ping was written in it, so
// that a silent connection is noticed even when nothing else is sent.
// While the lease is in use, the interval is a sixth of the session
// timeout: the lease still has half the timeout left when the next ping
// goes. The pings go-zookeeper sends itself (every third of the timeout)
// count (see pingLog): a session in use sends one ping every sixth of
// the timeout in all, half of them go-zookeeper's; one whose lease nobody
// asked for since the monitor's last wake leaves the pings to
// go-zookeeper (the lease keeps a third of the timeout at least). Rather
// than tick, it sleeps until the next instant that matters: a ping due,
// the lease's end (Status turns unhealthy), or, while suspended, a
// twelfth of the timeout. A ping due when go-zookeeper's next one is (see
// checkDelay) is left to go-zookeeper, and the monitor sleeps to the
// middle of the period after it: in use, it wakes once per go-zookeeper
// period, not twice; idle, the answer to go-zookeeper's ping moves the
// wake on (pingAnswered), and it does not wake while they are answered.
func (s *Session) monitor(first chan struct{}) error {
	var asks chan struct{} // plain mode: the pinger's
	if s.plain {
		asks = make(chan struct{}, 1)
		s.t.Go(func() error { return s.pinger(asks) })
	}
	wake := time.NewTimer(s.timeout() / 6)
	defer wake.Stop()
	s.wakeMu.Lock()
	s.wake = wake
	s.wakeMu.Unlock()
	firstDone := false
	for {
		select {
		case <-s.t.Dying():
			return nil
		case ev, ok := <-s.events:
			if !ok {
				return nil
			}
			if ev.Type != zk.EventSession {
				continue
			}
			s.onState(ev.State)
			if ev.State == zk.StateHasSession && !firstDone {
				firstDone = true
				close(first)
			}
		case <-wake.C:
			s.wakes.Add(1)
		}
		timeout := s.timeout()
		every := s.pingEvery(timeout)
		if pingDue(timeout, every, s.sincePinged()) {
			s.ping(asks, timeout)
		}
		s.refresh()
		s.wakeMu.Lock()
		s.idle = every > timeout/6
		wake.Reset(s.nextCheck(timeout, every))
		s.wakeMu.Unlock()
	}
}

// pingAnswered is called once a ping's reply renewed the lease (see
// pingLog). While the monitor keeps the idle schedule (its latest wake
// found the lease unused: pingEvery T/3), Lease was not called since and
// the session is healthy, the monitor's next wake moves to where the
// answer puts it (nextCheck): the wake a twelfth of the timeout after
// go-zookeeper's ping (checkDelay) would find that ping answered and only
// sleep again, so an idle session's monitor does not wake at all while
// go-zookeeper's pings are answered. When they stop being answered, it
// wakes as before: a twelfth after the next one was due, or at the
// lease's end. Otherwise its own schedule stands: in use it pings between
// go-zookeeper's; while suspended it must see the recovery; and after an
// answer to a ping sent a sixth of the timeout ago or more (a reply read
// after a pause of the process, say) it must look at the lease at once,
// as its timer, due meanwhile, says. Under wakeMu, so that a wake of the
// monitor that changes the schedule is never undone by an answer read at
// the same moment.
func (s *Session) pingAnswered() {
	if s.plain || s.leaseUsed.Load() {
		return
	}
	s.wakeMu.Lock()
	defer s.wakeMu.Unlock()
	if s.wake == nil || !s.idle || s.leaseUsed.Load() || !s.healthy.Load() {
		return
	}
	timeout := s.timeout()
	if time.Duration(s.now()-s.lastAnswered.Load()) >= timeout/6 {
		return
	}
	s.wake.Reset(s.nextCheck(timeout, timeout/3))
}

// pingEvery is the monitor's ping interval for a session timeout T: T/6
// when Lease was called since the monitor last looked (a hand-out or a
// commit is under way, and the lease keeps half the timeout when a ping
// goes), or in plain mode (go-zookeeper's own pings renew no lease); else
// T/3, go-zookeeper's own interval, so that an idle member sends no ping
// of its own while go-zookeeper's go out, and its lease still has a third
// of the timeout when the next is answered. A Lease call after a quiet
// spell finds that third left, and the monitor pings every T/6 again from
// its next wake on.
func (s *Session) pingEvery(T time.Duration) time.Duration {
	if s.leaseUsed.Swap(false) || s.plain {
		return T / 6
	}
	return T / 3
}

// pingDue reports whether the monitor pings, awake sincePinged after the
// latest ping or answer, for a session timeout T and a ping interval
// every: at every, or up to T/48 before, so that a wake that comes a
// moment early (go-zookeeper's ping, which the wake follows, went out
// late) pings rather than sleeping that moment.
func pingDue(T, every, sincePinged time.Duration) bool { return sincePinged >= every-T/48 }

// sincePinged is the time since the later of the send of the latest
// request ZooKeeper answered and the latest ping written (whose answer
// is counted on: a ping just written, by go-zookeeper or the monitor,
// makes another pointless).
func (s *Session) sincePinged() time.Duration {
	ref := s.lastAnswered.Load()
	if sc := s.lines.side.Load(); sc != nil {
		last, _ := sc.pings.lastPings()
		ref = max(ref, last)
	}
	return time.Duration(s.now() - ref)
}

// nextCheck is how long the monitor sleeps (see checkDelay).
func (s *Session) nextCheck(timeout, every time.Duration) time.Duration {
	sinceTheirs := time.Duration(-1)
	if sc := s.lines.side.Load(); sc != nil {
		if _, t := sc.pings.lastPings(); t > 0 {
			sinceTheirs = time.Duration(s.now() - t)
		}
	}
	return checkDelay(timeout, every, s.sincePinged(), time.Duration(s.now()-s.lastAnswered.Load()), sinceTheirs)
}

// checkDelay is how long the monitor sleeps for a session timeout T and
// a ping interval every (pingEvery), given the time since the latest
// ping or answer (sincePinged), since the send of the latest request
// answered (sinceAnswered, which dates the lease), and since
// go-zookeeper's latest ping on the connection (sinceTheirs, negative
// when unknown): until a ping is due, or until the lease ends if that is
// sooner. A ping due that could not go (the session is not connected;
// its return wakes the monitor), or a lease ended, is looked at again
// after a twelfth of T.
//
// go-zookeeper pings every third of T. When the ping due falls within
// T/24 of go-zookeeper's next one, or after it, that one is the ping and
// the monitor sleeps until a moment past it (afterTheirs): with a ping
// every T/6, to T/6 past it, the middle of go-zookeeper's next period,
// where its own ping goes; with one every T/3, to T/12 past it, to see
// that it went. Should go-zookeeper's ping not go out (its connection
// stalled), the monitor's goes at most 3T/8 (every T/6) or 5T/12 (every
// T/3) after the previous ping or answer, with 7T/24 or T/4 of the lease
// left.
func checkDelay(T, every, sincePinged, sinceAnswered, sinceTheirs time.Duration) time.Duration {
	due := every - sincePinged
	if due <= 0 {
		due = T / 12
	} else if sinceTheirs >= 0 {
		if next := T/3 - sinceTheirs; next > 0 && due >= next-T/24 {
			due = next + afterTheirs(T, every)
		}
	}
	if lease := T*2/3 - sinceAnswered; lease > 0 {
		return min(due, lease)
	}
	return due
}

// afterTheirs is how long past go-zookeeper's ping the monitor wakes (see
// checkDelay).
func afterTheirs(T, every time.Duration) time.Duration {
	if every <= T/6 {
		return T / 6
	}
	return T / 12
}

// ping sends a ping if the session is connected: on the connection
// itself, its answer credited by the connection's pingLog, or in plain
// mode through the pinger. A ping still unanswered when the next is due
// does not hold it back: go-zookeeper fails a stalled connection.
func (s *Session) ping(asks chan<- struct{}, timeout time.Duration) {
	s.mu.Lock()
	ok := s.usableOpen
	s.mu.Unlock()
	if !ok {
		return // nothing to learn, and nothing to queue during a reconnect
	}
	if asks != nil {
		select {
		case asks <- struct{}{}:
		default: // the pinger's last ping is still out
		}
		return
	}
	if sc := s.lines.side.Load(); sc != nil {
		sc.ping(time.Now().Add(timeout / 3))
	}
}

// pinger sends a cheap request whenever asked, recording replies: the
// monitor's pings in plain mode, where go-zookeeper writes the
// connection itself.
func (s *Session) pinger(asks <-chan struct{}) error {
	for {
		select {
		case <-s.t.Dying():
			return nil
		case <-asks:
			sent := s.now()
			if _, _, err := s.conn.Exists("/"); err == nil {
				s.answeredAt(sent)
				s.refresh()
			}
		}
	}
}

package zkconn

import (
	"errors"
	"testing"
	"time"
)

// TestPacedHosts drives the provider through the dial sequences
// go-zookeeper makes and checks when it asks for go-zookeeper's pause
// (retryStart: fail the queued requests, sleep a second).
func TestPacedHosts(t *testing.T) {
	const timeout = 6 * time.Second
	type step struct {
		after time.Duration // clock advance before this Next
		want  bool          // retryStart
		conn  bool          // Connected() after this dial
	}
	for _, tc := range []struct {
		name    string
		servers []string
		steps   []step
	}{
		{"first dial and a reconnect dial at once", []string{"127.0.0.1:1"}, []step{
			{0, false, true},
			{time.Minute, false, true}, // the connection dropped long after: no pause
		}},
		{"refused: pause every round", []string{"127.0.0.1:1"}, []step{
			{0, false, true},
			{time.Minute, false, false},          // dropped; refused
			{10 * time.Millisecond, true, false}, // (go-zookeeper sleeps retryPause)
			{10 * time.Millisecond, true, false},
			{10 * time.Millisecond, true, true},
		}},
		{"unanswered handshake: dial again at once", []string{"127.0.0.1:1"}, []step{
			{0, false, true},
			{time.Minute, false, false},    // dropped; this dial goes unanswered
			{timeout * 2 / 3, false, true}, // given up after 2/3 of the timeout: no pause
		}},
		{"lost a session timeout ago: fail the queue", []string{"127.0.0.1:1"}, []step{
			{0, false, true},
			{time.Minute, false, false},
			{timeout * 2 / 3, false, false},
			{timeout * 2 / 3, true, false}, // 4/3 of the timeout since the loss
		}},
		{"three servers: a pause only after all failed fast", []string{"127.0.0.1:1", "127.0.0.2:1", "127.0.0.3:1"}, []step{
			{0, false, true},
			{time.Minute, false, false},
			{time.Millisecond, false, false},
			{time.Millisecond, false, false},
			{time.Millisecond, true, false},
			{retryPause, false, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Unix(1e9, 0)
			h := newPacedHosts(func() time.Duration { return timeout })
			h.now = func() time.Time { return clock }
			if err := h.Init(tc.servers); err != nil {
				t.Fatal(err)
			}
			if h.Len() != len(tc.servers) {
				t.Fatalf("Len %d", h.Len())
			}
			seen := map[string]int{}
			for i, s := range tc.steps {
				clock = clock.Add(s.after)
				srv, retry := h.Next()
				seen[srv]++
				if retry != s.want {
					t.Errorf("dial %d: retryStart %v, want %v", i, retry, s.want)
				}
				if retry {
					clock = clock.Add(retryPause) // go-zookeeper sleeps
				}
				if s.conn {
					h.Connected()
				}
			}
			if len(tc.servers) > 1 && len(seen) != len(tc.servers) {
				t.Errorf("servers offered %v, want each of %v", seen, tc.servers)
			}
		})
	}
}

// TestPacedHostsFailQueued: after failQueued the next dial (only) comes
// with a retry start, whatever the round.
func TestPacedHostsFailQueued(t *testing.T) {
	h := newPacedHosts(func() time.Duration { return time.Minute })
	if err := h.Init([]string{"127.0.0.1:1", "127.0.0.2:1"}); err != nil {
		t.Fatal(err)
	}
	h.Next()
	h.Connected()
	h.failQueued()
	if _, retry := h.Next(); !retry {
		t.Error("the dial after failQueued: no retry start")
	}
	if _, retry := h.Next(); retry {
		t.Error("the dial after that: a retry start again")
	}
}

func TestPacedHostsInit(t *testing.T) {
	h := newPacedHosts(func() time.Duration { return time.Second })
	if err := h.Init([]string{"no-such-host.invalid:2181"}); !errors.Is(err, ErrDial) {
		t.Errorf("Init of an unresolvable server: %v, want ErrDial", err)
	}
	if err := h.Init([]string{"no-such-host.invalid:2181", "127.0.0.1:2181"}); err != nil {
		t.Errorf("Init with one resolvable server: %v", err)
	}
	if err := h.Init([]string{"no-port"}); !errors.Is(err, ErrConfig) {
		t.Errorf("Init of a server without a port: %v, want ErrConfig", err)
	}
}

package testcluster

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// listenLines listens on a loopback port until the test ends and sends
// each line read from the connections it accepts.
func listenLines(t *testing.T) (net.Listener, int, <-chan string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	Serve(t, l, func(c net.Conn) {
		defer c.Close()
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			lines <- sc.Text()
		}
	})
	return l, l.Addr().(*net.TCPAddr).Port, lines
}

// heldUntilHealed asserts that nothing arrives on lines for 1.5 s (longer
// than the retransmissions at 0.2, 0.6 and 1.4 s), then heals f and
// awaits want.
func heldUntilHealed(t *testing.T, f *NetFault, lines <-chan string, want string) {
	t.Helper()
	select {
	case got := <-lines:
		t.Fatalf("%q arrived through the cut", got)
	case <-time.After(1500 * time.Millisecond): // asserting an absence
	}
	f.Heal()
	select {
	case got := <-lines:
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing arrived 10 s after the heal; rules:\n%s", f.Rules())
	}
}

// TestNetFaultCutsAndHeals: a cut drops what the user's process sends to
// the port (its connection attempt included) and nothing else; the heal
// lets the kernel's retransmission deliver it.
func TestNetFaultCutsAndHeals(t *testing.T) {
	t.Parallel()
	u := AcquireNetUser(t)
	f := NewNetFault(t)
	l, port, lines := listenLines(t)

	f.Cut(u, port)
	// The test's own uid is not cut.
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(c, "root")
	c.Close()
	if got := <-lines; got != "root" {
		t.Fatalf("got %q from the test's own connection", got)
	}
	cmd := exec.Command("bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo cut >&3 && sleep 30", port))
	cmd.SysProcAttr = u.SysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	heldUntilHealed(t, f, lines, "cut")
}

// TestNetFaultHoldsOrphans: bytes an exited process left queued on a cut
// connection stay cut (the owner match alone lets them out at the next
// retransmission) and arrive after the heal.
func TestNetFaultHoldsOrphans(t *testing.T) {
	t.Parallel()
	u := AcquireNetUser(t)
	f := NewNetFault(t)
	_, port, lines := listenLines(t)

	// Connected before the cut; writes "queued" once the cut is in
	// place (its stdin closes), then exits.
	cmd := exec.Command("bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo before >&3 && read x; echo queued >&3", port))
	cmd.SysProcAttr = u.SysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if got := <-lines; got != "before" {
		t.Fatalf("got %q", got)
	}
	f.Cut(u, port)
	Await(t, 5*time.Second, 10*time.Millisecond, "the connection pinned", func() bool {
		return strings.Contains(f.Rules(), fmt.Sprintf("--dport %d", port)) && strings.Count(f.Rules(), "-j DROP") >= 2
	})
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	Await(t, 5*time.Second, 10*time.Millisecond, "an orphan with queued bytes", func() bool {
		socks, err := TCPSockets(u)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range socks {
			if s.RemotePort == port && s.Orphan && s.SendQueue > 0 {
				return true
			}
		}
		return false
	})
	heldUntilHealed(t, f, lines, "queued")
	Await(t, 5*time.Second, 10*time.Millisecond, "the queue delivered", func() bool {
		n, err := QueuedBytes(u, port)
		return err == nil && n == 0
	})
}

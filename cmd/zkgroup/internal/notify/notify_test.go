package notify

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNotify(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	n := New(nil)
	if !n.Ready("consuming 3 partitions") || !n.Watchdog() || !n.Stopping("bye") {
		t.Fatal("not sent")
	}
	buf := make([]byte, 512)
	var got []string
	for range 3 {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		k, err := conn.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(buf[:k]))
	}
	want := []string{"READY=1\nSTATUS=consuming 3 partitions", "WATCHDOG=1", "STOPPING=1\nSTATUS=bye"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestWatchdogInterval(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	if _, ok, _ := WatchdogInterval(); ok {
		t.Fatal("watchdog on without WATCHDOG_USEC")
	}
	t.Setenv("WATCHDOG_USEC", "2000000")
	d, ok, err := WatchdogInterval()
	if err != nil || !ok || d != time.Second {
		t.Fatalf("%v %v %v", d, ok, err)
	}
	t.Setenv("WATCHDOG_USEC", "abc")
	if _, _, err := WatchdogInterval(); err == nil {
		t.Fatal("bad WATCHDOG_USEC accepted")
	}
}

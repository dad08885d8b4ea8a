package testcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTailLeavesNoiseOut: a tail counts its n lines without ZooKeeper's
// warning about go-zookeeper's connections, and keeps the rest in order.
func TestTailLeavesNoiseOut(t *testing.T) {
	dir := t.TempDir()
	p := &process{logPath: filepath.Join(dir, "out"), appLog: filepath.Join(dir, "app")}
	if err := os.WriteFile(p.logPath, []byte("jvm started\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var app strings.Builder
	app.WriteString("INFO session 0x1 expired\n")
	for range 30 {
		app.WriteString("WARN Connection request from old client /127.0.0.1:45290; will be dropped if server is in r-o mode\n")
	}
	app.WriteString("INFO bound to port 10000\n")
	if err := os.WriteFile(p.appLog, []byte(app.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := p.tail(2), "INFO session 0x1 expired\nINFO bound to port 10000"; got != want {
		t.Errorf("tail(2) = %q, want %q", got, want)
	}
	if got, want := p.tail(10), "jvm started\nINFO session 0x1 expired\nINFO bound to port 10000"; got != want {
		t.Errorf("tail(10) = %q, want %q", got, want)
	}
}

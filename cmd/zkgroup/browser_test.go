package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// chromium finds Debian's headless browser; it fails the test with
// CI=true when there is none, else skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if testcluster.InCI() {
		t.Fatal("no chromium: apt-get install chromium (.ci/run does)")
	}
	t.Skip("no chromium (apt-get install chromium); fails with CI=true")
	return ""
}

// browse loads url in headless chromium, lets the page's scripts run for
// budget of virtual time, and returns the DOM they left; with a non-empty
// screenshot it also writes a PNG of the page there.
func browse(t *testing.T, url string, budget time.Duration, screenshot string) string {
	t.Helper()
	bin := chromium(t)
	run := func(extra ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		args := append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
			"--user-data-dir=" + t.TempDir(), "--window-size=1280,1400",
			"--virtual-time-budget=" + strconv.FormatInt(budget.Milliseconds(), 10)}, extra...)
		cmd := exec.CommandContext(ctx, bin, append(args, url)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", extra, err, tail(errOut.String(), 20))
		}
		return out.Bytes()
	}
	dom := string(run("--dump-dom"))
	if screenshot != "" {
		if err := os.MkdirAll(filepath.Dir(screenshot), 0o755); err != nil {
			t.Fatal(err)
		}
		run("--screenshot=" + screenshot)
		if fi, err := os.Stat(screenshot); err != nil || fi.Size() == 0 {
			t.Fatalf("no screenshot at %s: %v", screenshot, err)
		}
	}
	return dom
}

// artifactDir is where tests keep what a person may want to look at
// (screenshots): $ZKGROUP_TEST_ARTIFACTS, or zkgroup-test-artifacts in
// the temporary folder.
func artifactDir() string {
	if d := os.Getenv("ZKGROUP_TEST_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "zkgroup-test-artifacts")
}

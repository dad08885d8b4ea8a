package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// readmeExampleZK is the ZooKeeper address the walkthrough shows; the test
// puts the test cluster's in its place.
const readmeExampleZK = "127.0.0.1:40181/kafka"

// readmeBlock is one fenced code block of the README's first-run
// walkthrough.
type readmeBlock struct {
	lang  string
	lines []string
}

// firstRunBlocks returns the code blocks between the first-run markers of
// README.md, in order.
func firstRunBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i, j := strings.Index(s, "<!-- first-run: begin -->"), strings.Index(s, "<!-- first-run: end -->")
	if i < 0 || j < i {
		t.Fatal("README.md has no first-run walkthrough between its markers")
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	for _, l := range strings.Split(s[i:j], "\n") {
		l = strings.TrimSpace(l)
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(l, "```")}
		case cur != nil && l == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil && l != "":
			if k := strings.Index(l, "  #"); k >= 0 && cur.lang == "sh" {
				l = strings.TrimSpace(l[:k])
			}
			cur.lines = append(cur.lines, l)
		}
	}
	return blocks
}

// TestReadmeFirstRun walks README.md's first-run steps, in order, as
// written: the commands of its sh blocks run (on the shared test cluster
// instead of `make cluster-up`, with bin/ in a temporary folder and the
// admin server on a free port), its yaml block is applied to the copied
// config. The daemon must print every message, describe must show every
// partition owned and consumed, /readyz must answer 200, Ctrl-C must
// stop it with status 0, and it must log no warning or error. A step it does not know fails the test, so that
// README and test change together.
func TestReadmeFirstRun(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	stateDir := filepath.Join(work, "cluster")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	state, _ := json.Marshal(c.State())
	if err := os.WriteFile(filepath.Join(stateDir, testcluster.StateFile), state, 0o644); err != nil {
		t.Fatal(err)
	}
	// Own names on the shared cluster; the config copy is renamed alike.
	topic := testcluster.Name(t, "orders")
	port := testcluster.FreePort(t)
	rewrite := func(s string) string {
		s = strings.ReplaceAll(s, readmeExampleZK, c.ZooKeeperConnect())
		s = strings.ReplaceAll(s, "127.0.0.1:9779", fmt.Sprintf("127.0.0.1:%d", port))
		s = strings.ReplaceAll(s, "orders", topic)
		return strings.ReplaceAll(s, "bin/", bin+"/")
	}
	group := rewrite("orders-archiver")
	env := append(cleanEnv(), "ZKGROUP_CLUSTER_DIR="+stateDir)
	sh := func(line string) (string, int) {
		t.Helper()
		f := strings.Fields(line)
		cmd := exec.Command(f[0], f[1:]...)
		cmd.Dir, cmd.Env = root, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
			t.Fatalf("%s: %v", line, err)
		}
		return out.String(), cmd.ProcessState.ExitCode()
	}
	var daemon *exec.Cmd
	var daemonErr testcluster.Buffer
	var notify *notifySocket
	done := make(chan struct{})
	t.Cleanup(func() {
		if daemon != nil && daemon.ProcessState == nil {
			_ = daemon.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", tail(daemonErr.String(), 30))
		}
	})
	config := filepath.Join(bin, "zkgroup.yaml")
	steps := 0
	for _, b := range firstRunBlocks(t) {
		for _, orig := range b.lines {
			steps++
			line := rewrite(orig)
			switch {
			case b.lang == "yaml":
				applyConfigLine(t, config, line)
			case orig == "make cluster-up":
				// The shared test cluster stands in for it (its state file is
				// in ZKGROUP_CLUSTER_DIR).
			case strings.HasPrefix(orig, "go run ./internal/testcluster/cmd/zkcluster "),
				strings.HasPrefix(orig, "go build -o bin/zkgroup "),
				strings.HasPrefix(orig, "bin/zkgroup validate "):
				if out, code := sh(line); code != 0 {
					t.Fatalf("README step %q: exit %d\n%s", orig, code, out)
				}
			case strings.HasPrefix(orig, "cp configs/zkgroup.yaml bin/"):
				if err := os.MkdirAll(bin, 0o755); err != nil {
					t.Fatal(err)
				}
				raw, err := os.ReadFile(filepath.Join(root, "configs", "zkgroup.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				// The test's own names and admin port; the README's lines
				// are applied by the yaml step.
				if err := os.WriteFile(config, []byte(rewrite(string(raw))), 0o600); err != nil {
					t.Fatal(err)
				}
			case strings.HasPrefix(orig, "bin/zkgroup run ") && strings.Contains(orig, " > "):
				args, outFile, _ := strings.Cut(line, " > ")
				f := strings.Fields(args)
				out, err := os.Create(strings.TrimSpace(outFile))
				if err != nil {
					t.Fatal(err)
				}
				defer out.Close()
				notify = newNotifySocket(t)
				daemon = exec.Command(f[0], f[1:]...)
				daemon.Dir, daemon.Env = root, append(cleanEnv(), "NOTIFY_SOCKET="+notify.path)
				daemon.Stdout, daemon.Stderr = out, &daemonErr
				if err := daemon.Start(); err != nil {
					t.Fatal(err)
				}
				go func() { _ = daemon.Wait(); close(done) }()
				notify.waitFor(t, "READY=1", 60*time.Second)
				await(t, 10*time.Second, "the ready line in the log", func() bool { return strings.Contains(daemonErr.String(), "msg=ready") })
				await(t, 60*time.Second, "the daemon to print the 1,000 messages", func() bool {
					return len(readLines(t, out.Name())) >= 1000
				})
				checkExactlyOnce(t, topic, 1000, values(t, readLines(t, out.Name())))
			case strings.HasPrefix(orig, "bin/zkgroup describe "):
				var out string
				if !testcluster.Poll(60*time.Second, 200*time.Millisecond, func() bool {
					var code int
					out, code = sh(line)
					return code == 0 && describeDone(out, group, topic, 8)
				}) {
					t.Fatalf("README step %q: describe never showed the 8 partitions of %s owned with lag 0:\n%s", orig, topic, out)
				}
			case strings.HasPrefix(orig, "curl -s "):
				url := strings.Fields(line)[2]
				body, err := httpGet(url)
				if err != nil || !strings.HasPrefix(body, "ready") {
					t.Errorf("README step %q: %q %v", orig, body, err)
				}
			default:
				t.Fatalf("README step %q: the walkthrough test does not know it; teach readme_test.go", orig)
			}
		}
	}
	if steps < 9 || daemon == nil {
		t.Fatalf("the walkthrough has %d steps and runs no daemon", steps)
	}
	// Step 7: Ctrl-C.
	_ = daemon.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not stop within 30s of Ctrl-C")
	}
	if code := daemon.ProcessState.ExitCode(); code != 0 || !strings.Contains(daemonErr.String(), "stopped cleanly") {
		t.Errorf("Ctrl-C: exit %d\n%s", code, tail(daemonErr.String(), 5))
	}
	// A clean first start and stop warns about nothing, and says each
	// attribute once per line.
	for _, l := range strings.Split(daemonErr.String(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			t.Errorf("a clean first run logged: %s", l)
		}
		if dup := repeatedTextKeys(l); len(dup) > 0 {
			t.Errorf("log line repeats %v: %s", dup, l)
		}
	}
	// What the walkthrough leaves in the working tree is git-ignored.
	left := []string{"bin/zkgroup", "bin/zkgroup.yaml", "bin/orders.jsonl", ".cluster/cluster.json"}
	out, err := exec.Command("git", append([]string{"-C", root, "check-ignore"}, left...)...).CombinedOutput()
	if err != nil || len(strings.Fields(string(out))) != len(left) {
		t.Errorf("not all of %v is git-ignored: %v %s", left, err, out)
	}
}

// applyConfigLine replaces the top-level key of line ("key: value") in
// the config file.
func applyConfigLine(t *testing.T, path, line string) {
	t.Helper()
	key, _, ok := strings.Cut(line, ":")
	if !ok || strings.HasPrefix(line, " ") {
		t.Fatalf("README yaml line %q is not a top-level key: value", line)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	found := false
	for i, l := range lines {
		if strings.HasPrefix(l, key+":") {
			lines[i], found = line, true
		}
	}
	if !found {
		t.Fatalf("configs/zkgroup.yaml has no line %q to change", key+":")
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// describeDone reports whether describe's table shows parts partitions of
// topic, each owned, with lag 0.
func describeDone(out, group, topic string, parts int) bool {
	rows, err := testcluster.ParseGroupDescribe(strings.Split(out, "\n\n")[0])
	if err != nil {
		return false
	}
	n := 0
	for _, r := range rows {
		if r.Topic == topic && r.Lag == 0 && r.ConsumerID != "-" && r.ConsumerID != "" {
			n++
		}
	}
	return n == parts && strings.Contains(out, group)
}

// repeatedTextKeys returns the keys a slog text line carries more than
// once (values quoted by slog may hold spaces and '=').
func repeatedTextKeys(line string) []string {
	seen := map[string]int{}
	var dup []string
	for i := 0; i < len(line); {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		eq := strings.IndexByte(line[i:], '=')
		if eq < 0 {
			break
		}
		key := line[i : i+eq]
		i += eq + 1
		if seen[key]++; seen[key] == 2 {
			dup = append(dup, key)
		}
		if i < len(line) && line[i] == '"' {
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' {
					i++
				}
			}
			i++
			continue
		}
		for i < len(line) && line[i] != ' ' {
			i++
		}
	}
	return dup
}

func TestRepeatedTextKeys(t *testing.T) {
	for line, want := range map[string]string{
		`time=x level=WARN msg="a b=c group=d" group=g store=kafka group=g`: "[group]",
		`time=x level=INFO msg="x=\"y\" z" group=g error="a group=b"`:       "[]",
	} {
		if got := fmt.Sprint(repeatedTextKeys(line)); got != want {
			t.Errorf("repeatedTextKeys(%s) = %s, want %s", line, got, want)
		}
	}
}

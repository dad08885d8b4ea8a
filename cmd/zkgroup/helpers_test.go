package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/logcheck"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

func TestMain(m *testing.M) {
	code := testcluster.Main(m)
	built.remove()
	release.remove()
	os.Exit(code)
}

// buildOnce is a binary built into a temporary folder of its own once
// per test binary run, by the first test that asks for it; TestMain
// removes the folder.
type buildOnce struct {
	prefix string                 // of the folder's name
	build  func(dir string) error // writes dir/zkgroup
	once   sync.Once
	dir    string
	err    error
}

// path builds the binary unless done and returns its path; a failed
// build fails t (and every later caller).
func (b *buildOnce) path(t *testing.T) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", b.prefix)
		if err != nil {
			b.err = err
			return
		}
		b.dir = dir
		b.err = b.build(dir)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return filepath.Join(b.dir, "zkgroup")
}

func (b *buildOnce) remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

var built = &buildOnce{prefix: "zkgroup-bin-", build: func(dir string) error {
	args := []string{"build", "-o", filepath.Join(dir, "zkgroup")}
	if os.Getenv("ZKGROUP_TEST_RACE") != "" { // the daemon itself under the race detector
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}}

// binary builds the zkgroup binary once per test binary run.
func binary(t *testing.T) string {
	t.Helper()
	return built.path(t)
}

// proc is a running `zkgroup run`.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *testcluster.Buffer
	done   chan struct{}
	code   int
	notify *notifySocket
}

// notifySocket is a systemd notify socket: it records every datagram.
type notifySocket struct {
	path string
	conn *net.UnixConn
	mu   sync.Mutex
	msgs []string
	at   []time.Time
	ch   chan struct{}
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "zkn") // short path: sun_path is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	n := &notifySocket{path: filepath.Join(dir, "n.sock"), ch: make(chan struct{}, 1)}
	n.conn, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.conn.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := n.conn.Read(buf)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.msgs = append(n.msgs, string(buf[:k]))
			n.at = append(n.at, time.Now())
			n.mu.Unlock()
			select {
			case n.ch <- struct{}{}:
			default:
			}
		}
	}()
	return n
}

// waitFor waits for a datagram containing line and returns when it came.
func (n *notifySocket) waitFor(t *testing.T, line string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.After(timeout)
	for {
		n.mu.Lock()
		for i, m := range n.msgs {
			for _, l := range strings.Split(m, "\n") {
				if l == line {
					at := n.at[i]
					n.mu.Unlock()
					return at
				}
			}
		}
		got := append([]string(nil), n.msgs...)
		n.mu.Unlock()
		select {
		case <-n.ch:
		case <-deadline:
			t.Fatalf("no %q on the notify socket after %v; got %q", line, timeout, got)
		}
	}
}

type runOpts struct {
	config string   // YAML
	args   []string // extra flags
	env    []string
	stdout string // file for stdout; "" discards
}

func startDaemon(t *testing.T, o runOpts) *proc {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zkgroup.yaml")
	if err := os.WriteFile(cfg, []byte(o.config), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &proc{t: t, stderr: &testcluster.Buffer{}, done: make(chan struct{}), notify: newNotifySocket(t)}
	launch(t, d, bin, cfg, "", o, nil)
	return d
}

// launch starts `zkgroup run --config cfg` for d, in dir ("": the test's
// own) and as u (nil: the test's own user), and arranges its end: at
// cleanup it is killed if still running, every JSON log line of its is
// checked for repeated keys, and its stderr's tail is logged if the test
// failed.
func launch(t *testing.T, d *proc, bin, cfg, dir string, o runOpts, u *testcluster.NetUser) {
	t.Helper()
	d.cmd = exec.Command(bin, append([]string{"run", "--config", cfg}, o.args...)...)
	// JSON logs (unless the test sets the format), so that every line can
	// be checked for repeated keys at the end.
	d.cmd.Env = append(append(cleanEnv(), "NOTIFY_SOCKET="+d.notify.path, "ZKGROUP_LOG_FORMAT=json"), o.env...)
	d.cmd.Dir = dir
	d.cmd.Stderr = d.stderr
	if u != nil {
		d.cmd.SysProcAttr = u.SysProcAttr()
	}
	if o.stdout != "" {
		f, err := os.OpenFile(o.stdout, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		d.cmd.Stdout = f
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = d.cmd.Wait()
		d.code = d.cmd.ProcessState.ExitCode()
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = d.cmd.Process.Kill() // a stopped process too
			<-d.done
		}
		checkLogKeys(t, d.stderr.String())
		if t.Failed() {
			t.Logf("daemon %d stderr:\n%s", d.cmd.Process.Pid, tail(d.stderr.String(), 40))
		}
	})
}

// checkLogKeys fails t for every JSON log line of a daemon's stderr that
// carries a key twice, or that is not one JSON object. Lines that are not
// JSON log records (a sink's own stderr, messages printed before the
// logger exists) are left alone.
func checkLogKeys(t *testing.T, stderr string) {
	t.Helper()
	bad := 0
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(line, `{"time":`) {
			continue
		}
		dup, err := logcheck.JSONKeys([]byte(line))
		if (err != nil || len(dup) > 0) && bad < 10 {
			t.Errorf("daemon log line with repeated keys %v (%v): %s", dup, err, line)
		}
		if err != nil || len(dup) > 0 {
			bad++
		}
	}
	if bad >= 10 {
		t.Errorf("%d daemon log lines with repeated keys or not JSON", bad)
	}
}

// cleanEnv is the test's environment without ZKGROUP_ variables.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZKGROUP_") && !strings.HasPrefix(kv, "NOTIFY_SOCKET=") && !strings.HasPrefix(kv, "WATCHDOG_") {
			out = append(out, kv)
		}
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (d *proc) ready(timeout time.Duration) time.Time {
	d.t.Helper()
	return d.notify.waitFor(d.t, "READY=1", timeout)
}

// stop sends SIGTERM and returns the exit status.
func (d *proc) stop(timeout time.Duration) int {
	d.t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	return d.wait(timeout)
}

func (d *proc) wait(timeout time.Duration) int {
	d.t.Helper()
	select {
	case <-d.done:
		return d.code
	case <-time.After(timeout):
		d.t.Fatalf("daemon still running after %v", timeout)
	}
	return -1
}

// run runs a zkgroup command to completion.
func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runEnv(t, nil, args...)
}

// runEnv runs a zkgroup command with extra environment variables.
func runEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(cleanEnv(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// readLines returns the lines of a file (none when it does not exist).
func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// await polls cond (a file or a cluster, for which there is no event)
// every 20 ms.
func await(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testcluster.Await(t, timeout, 20*time.Millisecond, what, cond)
}

// daemonConf is the config the e2e tests start from: 6 s sessions,
// commits every 100 ms, drain_timeout 5s and shutdown_timeout 20s unless
// set, no admin server unless listen is set.
type daemonConf struct {
	zookeeper, group, subscription string
	listen                         string // the admin server's address
	drain, shutdown                string // drain_timeout, shutdown_timeout
	partition                      string // more lines of partition:, indented
	extra                          string // more top-level lines
}

func (d daemonConf) String() string {
	return fmt.Sprintf(`group: %s
zookeeper: %q
subscription: %q
session_timeout: 6s
admin:
  listen: %q
partition:
  commit_interval: 100ms
  drain_timeout: %s
%sshutdown_timeout: %s
%s`, d.group, d.zookeeper, d.subscription, d.listen, cmp.Or(d.drain, "5s"), d.partition, cmp.Or(d.shutdown, "20s"), d.extra)
}

// baseConfig is the daemonConf of group consuming topic of c, with extra.
func baseConfig(c *testcluster.Cluster, group, topic string, extra string) string {
	return daemonConf{zookeeper: c.ZooKeeperConnect(), group: group, subscription: "static:" + topic, extra: extra}.String()
}

// groupTopic names a group and a topic for t and creates the topic on
// c, parts partitions of replicas copies each.
func groupTopic(t *testing.T, c *testcluster.Cluster, parts int32, replicas int16) (group, topic string) {
	t.Helper()
	group, topic = testcluster.Name(t, "g"), testcluster.Name(t, "t")
	createTopic(t, c, topic, parts, replicas)
	return group, topic
}

// createTopic creates topic on c, parts partitions of replicas copies
// each; it fails t when it cannot.
func createTopic(t *testing.T, c *testcluster.Cluster, topic string, parts int32, replicas int16) {
	t.Helper()
	if err := c.CreateTopic(ctx(t), topic, parts, replicas); err != nil {
		t.Fatal(err)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// awaitCommittedAtEnd waits until every partition's committed offset is
// its log end, for a daemon still running (it commits on its own
// interval), then checks it as checkCommittedAtEnd does (with the log
// ends read again), and returns the log ends.
func awaitCommittedAtEnd(t *testing.T, c *testcluster.Cluster, group, topic string, parts int32) map[int32]int64 {
	t.Helper()
	testcluster.AwaitCommittedAtEnd(t, c, group, topic, parts)
	return checkCommittedAtEnd(t, c, group, topic, parts)
}

// checkCommittedAtEnd asserts that the group's committed offsets of every
// partition of topic are its log end, and returns the log ends.
func checkCommittedAtEnd(t *testing.T, c *testcluster.Cluster, group, topic string, parts int32) map[int32]int64 {
	t.Helper()
	return testcluster.CheckCommittedAtEnd(t, c, group, topic, parts)
}

// describeMatchesKafka runs describe --json with args and checks it against
// Kafka's own kafka-consumer-groups; it returns the latter's rows.
func describeMatchesKafka(t *testing.T, c *testcluster.Cluster, group string, parts int32, args ...string) []testcluster.GroupRow {
	t.Helper()
	stdout, stderr, code := run(t, append(append([]string{"describe"}, args...), "--json")...)
	if code != 0 {
		t.Fatalf("describe %v exited %d: %s", args, code, stderr)
	}
	var d ops.Description
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	rows, err := c.DescribeGroup(ctx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	compareDescribe(t, d.Partitions, rows, int(parts))
	return rows
}

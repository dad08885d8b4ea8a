package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// startWaitLine is the daemon's log line for each failed start attempt.
const startWaitLine = "ZooKeeper does not answer; trying again"

// logRecords returns the daemon's JSON log records with message msg.
func logRecords(stderr, msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(stderr, "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil && r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// TestStartWhileZooKeeperDown: daemons started while ZooKeeper is down
// (a cluster of their own: the package's shared cluster keeps its
// ZooKeeper). One waits (a log line per attempt with the reason, /healthz
// 200, /readyz 503 naming ZooKeeper, no READY=1) and, ZooKeeper started
// 10 s later, joins and consumes every message; one with
// zookeeper_start_timeout 2s exits 1 naming the setting; one stopped with
// SIGTERM while it waits exits 0 at once.
func TestStartWhileZooKeeperDown(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Brokers(1))
	const parts, n = 2, 20
	group, topic := groupTopic(t, c, parts, 1)
	testcluster.MustProduce(t, c, topic, parts, 0, n)
	if err := c.StopZooKeeper(); err != nil {
		t.Fatal(err)
	}
	zkStarted := false
	t.Cleanup(func() {
		if !zkStarted { // the cluster's Close wants it running
			_ = c.StartZooKeeper(ctx(t))
		}
	})

	port := testcluster.FreePort(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	waiting := startDaemon(t, runOpts{config: baseConfig(c, group, topic, ""), args: []string{"--admin-listen", fmt.Sprintf("127.0.0.1:%d", port)}, stdout: out})
	started := time.Now()
	bounded := startDaemon(t, runOpts{config: baseConfig(c, testcluster.Name(t, "g2"), topic, "zookeeper_start_timeout: 2s\n")})
	stopped := startDaemon(t, runOpts{config: baseConfig(c, testcluster.Name(t, "g3"), topic, "")})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)

	// The bound: exit 1 soon after it, naming it.
	code := bounded.wait(30 * time.Second)
	took := time.Since(started)
	msg := bounded.stderr.String()
	if code != 1 || !strings.Contains(msg, "zookeeper_start_timeout") || !strings.Contains(msg, "cannot start") {
		t.Errorf("with zookeeper_start_timeout 2s: exit %d after %v:\n%s", code, took, tail(msg, 5))
	}
	if took < 2*time.Second || took > 15*time.Second {
		t.Errorf("with zookeeper_start_timeout 2s: exited after %v", took)
	}
	t.Logf("zookeeper_start_timeout 2s: exit %d after %v", code, took.Round(time.Millisecond))

	// SIGTERM while waiting (inside the second attempt): exit 0 at once.
	await(t, 30*time.Second, "a failed attempt logged", func() bool { return len(logRecords(stopped.stderr.String(), startWaitLine)) > 0 })
	time.Sleep(time.Second) // the first backoff is 0.25-0.75 s: the second attempt is under way
	sigAt := time.Now()
	if err := stopped.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := stopped.wait(10 * time.Second); code != 0 {
		t.Errorf("SIGTERM while waiting: exit %d", code)
	}
	if took := time.Since(sigAt); took > 3*time.Second {
		t.Errorf("SIGTERM while waiting: exited after %v", took)
	}
	t.Logf("SIGTERM while waiting: exit after %v", time.Since(sigAt).Round(time.Millisecond))

	// Waiting: alive, not ready and why, not READY=1, one line per attempt.
	await(t, 30*time.Second, "/readyz naming ZooKeeper", func() bool {
		code, body := getURL(url + "/readyz")
		return code == 503 && strings.Contains(body, "waiting for ZooKeeper") && strings.Contains(body, "attempt")
	})
	if code, body := getURL(url + "/healthz"); code != 200 || !strings.Contains(body, "waiting for ZooKeeper") {
		t.Errorf("/healthz while waiting: %d %q", code, body)
	}
	if waiting.notify.has("READY=1") {
		t.Errorf("READY=1 before joining")
	}
	for _, r := range logRecords(waiting.stderr.String(), startWaitLine) {
		if r["attempt"] == nil || !strings.Contains(fmt.Sprint(r["error"]), "ZooKeeper") || r["retry_in"] == nil {
			t.Errorf("attempt line without attempt, reason or retry_in: %v", r)
		}
	}

	// ZooKeeper 10 s after the start: the daemon joins and consumes.
	time.Sleep(time.Until(started.Add(10 * time.Second))) // the scenario: ZooKeeper comes late
	if waiting.exited() {
		t.Fatalf("the daemon exited %d while ZooKeeper was down", waiting.code)
	}
	attempts := len(logRecords(waiting.stderr.String(), startWaitLine))
	if err := c.StartZooKeeper(ctx(t)); err != nil {
		t.Fatal(err)
	}
	zkStarted = true
	up := time.Now()
	readyAt := waiting.ready(90 * time.Second)
	t.Logf("%d failed attempts in 10 s; ready %v after ZooKeeper answered, %v after the start",
		attempts, readyAt.Sub(up).Round(time.Millisecond), readyAt.Sub(started).Round(time.Millisecond))
	if attempts < 1 {
		t.Errorf("no failed attempt logged in 10 s")
	}
	await(t, 60*time.Second, "every message printed", func() bool { return len(readLines(t, out)) >= n })
	if code, body := getURL(url + "/readyz"); code != 200 {
		t.Errorf("/readyz once joined: %d %q", code, body)
	}
	if code := waiting.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	checkExactlyOnce(t, topic, n, values(t, readLines(t, out)))
}

// getURL returns the status and body of a GET of url (0 and the error
// when it failed).
func getURL(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStartZooKeeperRefusedSaidAtOnce: a daemon whose ZooKeeper refuses
// connections says so, naming the connect string and what it waits for,
// within 3 s of its start rather than after the session timeout; SIGTERM
// then stops it with status 0. No cluster needed.
func TestStartZooKeeperRefusedSaidAtOnce(t *testing.T) {
	t.Parallel()
	connect := testcluster.RefusedAddr(t) + "/kafka"
	d := startDaemon(t, runOpts{config: fmt.Sprintf("group: g\nzookeeper: %q\nsubscription: \"static:t\"\nsession_timeout: 6s\nadmin:\n  listen: \"\"\n", connect)})
	const msg = "ZooKeeper refuses connections; waiting for a session"
	await(t, 3*time.Second, "the refusal said", func() bool { return len(logRecords(d.stderr.String(), msg)) > 0 })
	r := logRecords(d.stderr.String(), msg)[0]
	if r["zookeeper"] != connect || r["wait"] != float64(6*time.Second) || !strings.Contains(fmt.Sprint(r["error"]), "connection refused") {
		t.Errorf("refusal line: %v", r)
	}
	if code := d.stop(10 * time.Second); code != 0 {
		t.Errorf("SIGTERM while waiting: exit %d", code)
	}
}

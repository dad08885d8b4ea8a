package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// groupNodeExists reports whether /consumers/<group> exists in ZooKeeper.
func groupNodeExists(t *testing.T, c *testcluster.Cluster, group string) bool {
	t.Helper()
	conn := testcluster.ZooKeeper(t, c)
	defer conn.Close() // at return: one session per call, not per test
	ok, _, err := conn.Exists(c.Chroot() + "/consumers/" + group)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestBadConfigExit2: a bad configuration exits 2 with a message naming
// the field, and nothing is written to ZooKeeper.
func TestBadConfigExit2(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	for _, tc := range []struct {
		name  string
		extra string
		env   []string
		args  []string
		want  []string
	}{
		{"short session", "strategy: sticky\nsession_timeout: 2s\n", nil, nil, []string{"session_timeout", "at least 6s", "line"}},
		{"unknown key", "sink:\n  tpye: exec\n", nil, nil, []string{`unknown key "tpye"`, "line"}},
		{"env override", "", []string{"ZKGROUP_SINK_TYPE=kafka"}, nil, []string{"sink.type", "env ZKGROUP_SINK_TYPE"}},
		{"flag override", "", nil, []string{"--partition-max-unacked", "0"}, []string{"partition.max_unacked", "flag --partition-max-unacked"}},
		{"exec without command", "sink:\n  type: exec\n", nil, nil, []string{"sink.exec.command", "required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group, topic := testcluster.Name(t, "g"), testcluster.Name(t, "t")
			cfg := baseConfig(c, group, topic, tc.extra)
			if strings.Contains(tc.extra, "session_timeout") { // YAML refuses duplicate keys
				cfg = strings.Replace(cfg, "session_timeout: 6s\n", "", 1)
			}
			d := startDaemon(t, runOpts{config: cfg, env: tc.env, args: tc.args})
			if code := d.wait(30 * time.Second); code != 2 {
				t.Fatalf("exit status %d, want 2; stderr:\n%s", code, d.stderr.String())
			}
			msg := d.stderr.String()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr lacks %q:\n%s", w, msg)
				}
			}
			if strings.Count(strings.TrimSpace(msg), "\n") > 2 {
				t.Errorf("message not short and clear:\n%s", msg)
			}
			if groupNodeExists(t, c, group) {
				t.Errorf("/consumers/%s was written despite the bad config", group)
			}
		})
	}
}

// values returns the "value" of each JSON line.
func values(t *testing.T, lines []string) []string {
	t.Helper()
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		var r sink.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if r.Value == nil {
			t.Fatalf("line %q has no value", l)
		}
		out = append(out, *r.Value)
	}
	return out
}

// checkExactlyOnce fails unless seen holds Value(topic, i) for i < n,
// each exactly once.
func checkExactlyOnce(t *testing.T, topic string, n int, seen []string) {
	t.Helper()
	count := map[string]int{}
	for _, v := range seen {
		count[v]++
	}
	var missing, dup []string
	for i := 0; i < n; i++ {
		switch v := testcluster.Value(topic, i); count[v] {
		case 0:
			missing = append(missing, v)
		case 1:
		default:
			dup = append(dup, fmt.Sprintf("%s x%d", v, count[v]))
		}
		delete(count, testcluster.Value(topic, i))
	}
	if len(missing) > 0 || len(dup) > 0 || len(count) > 0 {
		t.Fatalf("%d messages: %d missing (%.5v), %d duplicated (%.5v), %d unexpected", n, len(missing), missing, len(dup), dup, len(count))
	}
}

// TestSIGTERMRestart: SIGTERM while messages flow, then a restart of the
// same group: every message printed exactly once (by content) across the
// two runs; describe then matches Kafka's kafka-consumer-groups.
func TestSIGTERMRestart(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	const parts, batches, batch = 8, 30, 100
	group, topic := groupTopic(t, c, parts, 3)
	dir := t.TempDir()
	out1, out2 := filepath.Join(dir, "run1.jsonl"), filepath.Join(dir, "run2.jsonl")
	cfg := baseConfig(c, group, topic, "")

	var wg sync.WaitGroup
	produced := make(chan error, 1)
	wg.Add(1)
	go func() { // keeps messages flowing across the stop and the restart
		defer wg.Done()
		for b := 0; b < batches; b++ {
			if _, err := c.Produce(topic, parts, b*batch, batch); err != nil {
				produced <- err
				return
			}
			time.Sleep(30 * time.Millisecond) // pacing the producer, not synchronisation
		}
		produced <- nil
	}()

	d1 := startDaemon(t, runOpts{config: cfg, stdout: out1})
	d1.ready(60 * time.Second)
	await(t, 60*time.Second, "the first run to print 500 messages", func() bool { return len(readLines(t, out1)) >= 500 })
	if code := d1.stop(30 * time.Second); code != 0 {
		t.Fatalf("first run exited %d", code)
	}
	n1 := len(readLines(t, out1))
	if !strings.Contains(d1.stderr.String(), "stopped cleanly") {
		t.Errorf("no clean stop logged:\n%s", tail(d1.stderr.String(), 10))
	}
	d2 := startDaemon(t, runOpts{config: cfg, stdout: out2})
	d2.ready(60 * time.Second)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	total := batches * batch
	await(t, 60*time.Second, "every message printed", func() bool {
		return len(readLines(t, out1))+len(readLines(t, out2)) >= total
	})
	if code := d2.stop(30 * time.Second); code != 0 {
		t.Fatalf("second run exited %d", code)
	}
	lines1, lines2 := readLines(t, out1), readLines(t, out2)
	t.Logf("run 1 printed %d (%d when it exited), run 2 printed %d", len(lines1), n1, len(lines2))
	if len(lines1) == 0 || len(lines2) == 0 || len(lines1) >= total {
		t.Fatalf("the stop was not mid-stream: run 1 printed %d, run 2 %d of %d", len(lines1), len(lines2), total)
	}
	checkExactlyOnce(t, topic, total, append(values(t, lines1), values(t, lines2)...))

	// Describe against Kafka's own tool, for the committed offsets.
	rows := describeMatchesKafka(t, c, group, parts, "--zookeeper", c.ZooKeeperConnect(), "--group", group)
	// Every commit of the daemon carries its claim's fencing token, which
	// describe --json shows.
	js, _, code := run(t, "describe", "--zookeeper", c.ZooKeeperConnect(), "--group", group, "--json")
	var desc ops.Description
	if err := json.Unmarshal([]byte(js), &desc); code != 0 || err != nil {
		t.Fatalf("describe --json exited %d: %v", code, err)
	}
	for _, r := range desc.Partitions {
		if r.CurrentOffset >= 0 && r.ClaimToken <= 0 {
			t.Errorf("partition %d: committed %d without a claim token", r.Partition, r.CurrentOffset)
		}
	}
	// The text form parses with the parser of Kafka's table.
	text, _, code := run(t, "describe", "--zookeeper", c.ZooKeeperConnect(), "--group", group)
	if code != 0 {
		t.Fatalf("describe exited %d", code)
	}
	parsed, err := testcluster.ParseGroupDescribe(strings.Split(text, "\n\n(offsets")[0])
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	compareDescribe(t, toOpsRows(parsed), rows, parts)
}

func toOpsRows(rs []testcluster.GroupRow) []ops.Row {
	var out []ops.Row
	for _, r := range rs {
		out = append(out, ops.Row{Topic: r.Topic, Partition: r.Partition, CurrentOffset: r.CurrentOffset, LogEndOffset: r.LogEndOffset, Lag: r.Lag})
	}
	return out
}

func compareDescribe(t *testing.T, ours []ops.Row, kafka []testcluster.GroupRow, parts int) {
	t.Helper()
	if len(kafka) != parts || len(ours) != parts {
		t.Fatalf("kafka-consumer-groups has %d rows, zkgroup describe %d; want %d", len(kafka), len(ours), parts)
	}
	want := map[string]testcluster.GroupRow{}
	for _, r := range kafka {
		want[r.Topic+"/"+strconv.Itoa(int(r.Partition))] = r
	}
	for _, r := range ours {
		k, ok := want[r.Topic+"/"+strconv.Itoa(int(r.Partition))]
		if !ok {
			t.Errorf("%s/%d: not in kafka-consumer-groups", r.Topic, r.Partition)
			continue
		}
		if r.CurrentOffset != k.CurrentOffset || r.LogEndOffset != k.LogEndOffset || r.Lag != k.Lag {
			t.Errorf("%s/%d: zkgroup %d/%d lag %d, kafka-consumer-groups %d/%d lag %d", r.Topic, r.Partition,
				r.CurrentOffset, r.LogEndOffset, r.Lag, k.CurrentOffset, k.LogEndOffset, k.Lag)
		}
	}
}

// TestExecSinkTransientFailure: every message's command fails once and
// succeeds on the retry; nothing is lost, nothing duplicated, order within
// each partition kept, and the committed offsets reach the log end. Then
// offsets reset (dry run, refused, executed) and migrate run on the group.
func TestExecSinkTransientFailure(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	const parts, n = 4, 200
	group, topic := groupTopic(t, c, parts, 3)
	testcluster.MustProduce(t, c, topic, parts, 0, n)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	script := filepath.Join(dir, "handle.sh")
	// Fails the first attempt of each message (a marker per offset), then
	// appends "partition offset value" in one write.
	body := `#!/bin/sh
m="$MARKS/$ZKGROUP_PARTITION-$ZKGROUP_OFFSET"
if [ ! -e "$m" ]; then : > "$m"; echo "transient failure" >&2; exit 1; fi
v=$(cat)
printf '%s %s %s\n' "$ZKGROUP_PARTITION" "$ZKGROUP_OFFSET" "$v" >> "$OUT"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	marks := filepath.Join(dir, "marks")
	if err := os.Mkdir(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(c, group, topic, fmt.Sprintf(`sink:
  type: exec
  exec:
    command: [%q]
    timeout: 10s
  retry:
    max_attempts: 3
    initial_backoff: 5ms
    max_backoff: 20ms
  on_failure: stop
log:
  level: error
`, script))
	d := startDaemon(t, runOpts{config: cfg, env: []string{"OUT=" + out, "MARKS=" + marks}})
	d.ready(60 * time.Second)
	await(t, 90*time.Second, "every message handled", func() bool { return len(readLines(t, out)) >= n })
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := readLines(t, out)
	var vals []string
	last := map[string]int64{}
	for _, l := range lines {
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 {
			t.Fatalf("line %q", l)
		}
		off, _ := strconv.ParseInt(f[1], 10, 64)
		if prev, ok := last[f[0]]; ok && off <= prev {
			t.Errorf("partition %s: offset %d after %d", f[0], off, prev)
		}
		last[f[0]] = off
		vals = append(vals, f[2])
	}
	checkExactlyOnce(t, topic, n, vals)
	entries, _ := os.ReadDir(marks)
	if len(entries) != n {
		t.Errorf("%d first attempts failed, want %d", len(entries), n)
	}
	hwm := checkCommittedAtEnd(t, c, group, topic, parts)

	t.Run("offsets reset", func(t *testing.T) { testOffsetsReset(t, c, group, topic, parts, hwm) })
}

func testOffsetsReset(t *testing.T, c *testcluster.Cluster, group, topic string, parts int32, hwm map[int32]int64) {
	zkc := c.ZooKeeperConnect()
	base := []string{"offsets", "reset", "--zookeeper", zkc, "--group", group, "--topic", topic}
	committed := func() map[int32]int64 {
		m, err := c.CommittedOffsets(ctx(t), group, topic, parts)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	// Dry run: a plan, nothing written.
	stdout, stderr, code := run(t, append(base, "--to-earliest", "--json")...)
	if code != 0 {
		t.Fatalf("dry run exited %d: %s", code, stderr)
	}
	var plan struct {
		Executed   bool           `json:"executed"`
		Partitions []ops.ResetRow `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Executed || len(plan.Partitions) != int(parts) {
		t.Fatalf("plan %+v", plan)
	}
	for _, r := range plan.Partitions {
		if r.Current != hwm[r.Partition] || r.Target != 0 {
			t.Errorf("plan row %+v, want current %d target 0", r, hwm[r.Partition])
		}
	}
	for p, off := range committed() {
		if off != hwm[p] {
			t.Fatalf("dry run wrote: partition %d committed %d", p, off)
		}
	}

	// Refused while a member is registered.
	conn := testcluster.ZooKeeper(t, c)
	member := c.Chroot() + "/consumers/" + group + "/ids/intruder"
	if _, err := conn.Create(member, []byte(`{"version":1,"subscription":{"x":1},"pattern":"static","timestamp":"1"}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = run(t, append(base, "--to-earliest", "--execute")...)
	if code != 1 || !strings.Contains(stderr, "intruder") || !strings.Contains(stderr, "nothing was written") {
		t.Fatalf("execute with a member: exit %d, %s", code, stderr)
	}
	if err := conn.Delete(member, -1); err != nil {
		t.Fatal(err)
	}

	// Executed.
	if _, stderr, code = run(t, append(base, "--to-earliest", "--execute")...); code != 0 {
		t.Fatalf("execute exited %d: %s", code, stderr)
	}
	for p, off := range committed() {
		if off != 0 {
			t.Errorf("after --to-earliest: partition %d committed %d", p, off)
		}
	}
	if _, stderr, code = run(t, append(base, "--shift-by", "7", "--partitions", "0,1", "--execute")...); code != 0 {
		t.Fatalf("shift exited %d: %s", code, stderr)
	}
	got := committed()
	if got[0] != 7 || got[1] != 7 || got[2] != 0 {
		t.Errorf("after --shift-by 7 on 0,1: %v", got)
	}
	// Bad usage exits 2.
	if _, _, code = run(t, append(base, "--to-earliest", "--to-latest")...); code != 2 {
		t.Errorf("two modes: exit %d, want 2", code)
	}

	// Migrate Kafka -> ZooKeeper, then describe the ZooKeeper storage.
	mig := []string{"offsets", "migrate", "--zookeeper", zkc, "--group", group, "--from", "kafka", "--to", "zookeeper"}
	if stdout, stderr, code = run(t, append(mig, "--json")...); code != 0 || !strings.Contains(stdout, `"action": "dry-run"`) {
		t.Fatalf("migrate dry run: exit %d: %s %s", code, stdout, stderr)
	}
	if _, stderr, code = run(t, append(mig, "--execute")...); code != 0 {
		t.Fatalf("migrate exited %d: %s", code, stderr)
	}
	stdout, stderr, code = run(t, "describe", "--zookeeper", zkc, "--group", group, "--offset-storage", "zookeeper", "--json")
	if code != 0 {
		t.Fatalf("describe: %d %s", code, stderr)
	}
	var d ops.Description
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	zkOffsets := map[int32]int64{}
	for _, r := range d.Partitions {
		zkOffsets[r.Partition] = r.CurrentOffset
	}
	if zkOffsets[0] != 7 || zkOffsets[1] != 7 || zkOffsets[2] != 0 || zkOffsets[3] != 0 {
		t.Errorf("ZooKeeper offsets after migrate: %v", zkOffsets)
	}
}

// TestNotifyHealthAndFootprint: READY=1 once every partition is fetching,
// /healthz and /readyz through `zkgroup healthcheck`, watchdog pings,
// STOPPING=1 on SIGTERM; logs start-to-ready time and steady RSS with 24
// owned partitions.
func TestNotifyHealthAndFootprint(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	const parts = 24
	group, topic := groupTopic(t, c, parts, 1)
	testcluster.MustProduce(t, c, topic, parts, 0, 2400)
	port := testcluster.FreePort(t)
	cfg := daemonConf{zookeeper: c.ZooKeeperConnect(), group: group, subscription: "static:" + topic, listen: fmt.Sprintf("127.0.0.1:%d", port)}.String()
	started := time.Now()
	d := startDaemon(t, runOpts{config: cfg, env: []string{"WATCHDOG_USEC=400000"}})
	readyAt := d.ready(60 * time.Second)
	t.Logf("start to READY=1: %v (24 partitions)", readyAt.Sub(started).Round(time.Millisecond))
	d.notify.waitFor(t, "WATCHDOG=1", 10*time.Second)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for _, p := range []string{"/healthz", "/readyz"} {
		if out, _, code := run(t, "healthcheck", "--url", url+p); code != 0 {
			t.Errorf("healthcheck %s: exit %d: %s", p, code, out)
		}
	}
	out, _, code := run(t, "healthcheck", "--url", url+"/nope", "--json")
	if code != 1 || !strings.Contains(out, `"status": 404`) {
		t.Errorf("healthcheck of a 404: exit %d %s", code, out)
	}
	// Steady state: everything consumed and committed.
	await(t, 60*time.Second, "lag 0 on every partition", func() bool { return metricsLagZero(t, url, parts) })
	rss := vmRSS(t, d.cmd.Process.Pid)
	t.Logf("steady RSS with %d owned partitions: %s", parts, rss)
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	d.notify.waitFor(t, "STOPPING=1", time.Second)
	if groupNodeExists(t, c, group) {
		conn, _ := c.Connect(5 * time.Second)
		defer conn.Close()
		ids, _, _ := conn.Children(c.Chroot() + "/consumers/" + group + "/ids")
		if len(ids) != 0 {
			t.Errorf("still registered after a clean stop: %v", ids)
		}
	}
}

func vmRSS(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
	}
	return "unknown"
}

// metricsLagZero reports whether /metrics shows lag 0 for every partition.
func metricsLagZero(t *testing.T, url string, parts int) bool {
	resp, err := httpGet(url + "/metrics")
	if err != nil {
		return false
	}
	n := 0
	for _, l := range strings.Split(resp, "\n") {
		if strings.HasPrefix(l, "zkgroup_lag{") {
			if !strings.HasSuffix(l, " 0") {
				return false
			}
			n++
		}
	}
	return n == parts
}

func TestCLIUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: zkgroup"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"describe"}, 2, "--zookeeper is required"},
		{[]string{"describe", "--zookeeper", "h:1", "--group", "a/b"}, 2, "--group"},
		{[]string{"offsets", "reset", "--zookeeper", "h:1", "--group", "g", "--topic", "t"}, 2, "exactly one of"},
		{[]string{"offsets", "migrate", "--zookeeper", "h:1", "--group", "g", "--from", "kafka", "--to", "kafka"}, 2, "--from and --to"},
		{[]string{"validate", "--group", "g"}, 2, "zookeeper: required"},
		{[]string{"run", "--nope"}, 2, "flag provided but not defined"},
	} {
		_, stderr, code := run(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("zkgroup %v: exit %d (want %d), stderr %q (want %q)", tc.args, code, tc.code, stderr, tc.want)
		}
	}
	out, _, code := run(t, "version", "--json")
	var b buildInfo
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.Version == "" || b.GoVersion == "" {
		t.Errorf("version --json: %d %q", code, out)
	}
	cfg := filepath.Join(t.TempDir(), "ok.yaml")
	_ = os.WriteFile(cfg, []byte("group: g\nzookeeper: h:2181\nsubscription: t\nsink:\n  type: http\n  http:\n    url: http://x/\n    headers: {Authorization: secret}\n"), 0o600)
	out, _, code = run(t, "validate", "--config", cfg, "--json")
	if code != 0 || !strings.Contains(out, `"valid": true`) || strings.Contains(out, "secret") {
		t.Errorf("validate --json: %d %s", code, out)
	}
	// The sample configuration is valid.
	if out, stderr, code := run(t, "validate", "--config", "../../configs/zkgroup.yaml"); code != 0 {
		t.Errorf("configs/zkgroup.yaml: %d %s %s", code, out, stderr)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInputsRefusedUpFront: hostile arguments and configurations are
// refused with exit 2 and a message naming the flag or field, before
// anything connects: ZooKeeper's address refuses connections, which was
// all some of them reported (exit 1), and others went through to Kafka.
// No message echoes a huge input whole.
func TestBadInputsRefusedUpFront(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const base = "group: g\nsubscription: t\n"
	const zk = "127.0.0.1:1/kafka" // nothing listens on port 1
	bigHost := config("bighost.yaml", base+"zookeeper: \""+strings.Repeat("h", 1000000)+":2181/kafka\"\n")
	dotdot := config("dotdot.yaml", base+"zookeeper: 127.0.0.1:1/a/../kafka\n")
	ctrl := config("ctrl.yaml", base+"zookeeper: \"127.0.0.1:1/ka\\x01fka\"\n")
	crlf := config("crlf.yaml", base+"zookeeper: "+zk+"\nsink:\n  type: http\n  http:\n    url: http://127.0.0.1:1/in\n    headers: {X-Token: \"s3cr3t\\r\\nX-Evil: 1\"}\n")
	nulUser := config("nuluser.yaml", base+"zookeeper: "+zk+"\nkafka:\n  sasl: {mechanism: PLAIN, username: \"ali\\0ce\", password_env: PW}\n")
	nlZKUser := config("nlzkuser.yaml", base+"zookeeper: "+zk+"\nzookeeper_auth: {username: \"zk\\nuser\", password_env: PW}\n")
	graceNoID := config("gracenoid.yaml", base+"zookeeper: "+zk+"\nrestart_grace: 30s\n")
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"reset before 1970", []string{"offsets", "reset", "--zookeeper", zk, "--group", "g", "--topic", "t", "--to-datetime", "1969-12-31T23:59:59.999Z"}, "--to-datetime"},
		{"reset before 1970, no zone", []string{"offsets", "reset", "--zookeeper", zk, "--group", "g", "--topic", "t", "--to-datetime", "1969-12-31T23:00:00"}, "before 1970"},
		{"chroot ..: validate", []string{"validate", "--config", dotdot}, "zookeeper"},
		{"chroot ..: run", []string{"run", "--config", dotdot}, "zookeeper"},
		{"chroot ..: describe", []string{"describe", "--zookeeper", "127.0.0.1:1/a/..", "--group", "g"}, "zookeeper"},
		{"chroot control character", []string{"validate", "--config", ctrl}, "U+0001"},
		{"1 MB host: validate", []string{"validate", "--config", bigHost}, "host of 1000000 bytes"},
		{"1 MB host: run", []string{"run", "--config", bigHost}, "host of 1000000 bytes"},
		{"header CRLF: validate", []string{"validate", "--config", crlf}, "sink.http.headers"},
		{"header CRLF: run", []string{"run", "--config", crlf}, "sink.http.headers"},
		{"describe --timeout -1s", []string{"describe", "--zookeeper", zk, "--group", "g", "--timeout", "-1s"}, "--timeout"},
		{"describe --timeout 0s", []string{"describe", "--zookeeper", zk, "--group", "g", "--timeout", "0s"}, "--timeout"},
		{"reset --timeout 0s", []string{"offsets", "reset", "--zookeeper", zk, "--group", "g", "--topic", "t", "--to-earliest", "--timeout", "0s"}, "--timeout"},
		{"reset bad topic", []string{"offsets", "reset", "--zookeeper", zk, "--group", "g", "--topic", "a b", "--to-earliest"}, "--topic"},
		{"reset topic ..", []string{"offsets", "reset", "--zookeeper", zk, "--group", "g", "--topic", "..", "--to-earliest"}, "--topic"},
		{"reset topic too long", []string{"offsets", "reset", "--zookeeper", zk, "--group", "g", "--topic", strings.Repeat("t", 250), "--to-earliest"}, "--topic"},
		{"migrate bad topic", []string{"offsets", "migrate", "--zookeeper", zk, "--group", "g", "--from", "kafka", "--to", "zookeeper", "--topic", "ok,b@d"}, "--topic"},
		{"leave without an id", []string{"leave", "--zookeeper", zk, "--group", "g"}, "--instance-id is required"},
		{"leave bad id", []string{"leave", "--zookeeper", zk, "--group", "g", "--instance-id", "a/b"}, "--instance-id"},
		{"leave --timeout 0s", []string{"leave", "--zookeeper", zk, "--group", "g", "--instance-id", "a", "--timeout", "0s"}, "--timeout"},
		{"restart_grace without instance_id", []string{"validate", "--config", graceNoID}, "restart_grace"},
		{"restart_grace without instance_id: run", []string{"run", "--config", graceNoID}, "needs instance_id"},
		{"SASL user with NUL", []string{"validate", "--config", nulUser}, "kafka.sasl.username: must not hold control characters"},
		{"ZooKeeper user with newline", []string{"validate", "--config", nlZKUser}, "zookeeper_auth.username: must not hold control characters"},
	} {
		stdout, stderr, code := runEnv(t, []string{"PW=pw"}, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d (want 2), stderr %.600q (want %q)", tc.name, code, stderr, tc.want)
		}
		if strings.Contains(stderr, "connection refused") || len(stdout)+len(stderr) > 2000 || strings.Contains(stderr, "s3cr3t") {
			t.Errorf("%s: connected, echoed too much or showed a secret (%d bytes): %.600q", tc.name, len(stdout)+len(stderr), stderr)
		}
	}
}

// TestValidateSaysWhatItChecked: validate says that it checked offline
// only, warns of ZKGROUP_* variables that set no field as run does (a
// misspelt ZKGROUP_SESION_TIMEOUT), and shows a token in the http sink
// URL's query as xxxxx in --json.
func TestValidateSaysWhatItChecked(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	body := "group: g\nzookeeper: 127.0.0.1:1/kafka\nsubscription: t\nsink:\n  type: http\n  http:\n    url: \"https://h/in?token=s3cr3t&sig=abc\"\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"ZKGROUP_SESION_TIMEOUT=30s"}
	stdout, stderr, code := runEnv(t, env, "validate", "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "configuration OK (offline checks only; --connect also checks") ||
		!strings.Contains(stderr, "warning: ignoring environment variables that set no field: ZKGROUP_SESION_TIMEOUT") {
		t.Errorf("validate: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runEnv(t, env, "validate", "--config", cfg, "--json")
	if code != 0 || !strings.Contains(stdout, `"checked": "offline"`) || !strings.Contains(stdout, "ZKGROUP_SESION_TIMEOUT") ||
		!strings.Contains(stdout, "https://h/in?token=xxxxx&sig=xxxxx") || strings.Contains(stdout+stderr, "s3cr3t") {
		t.Errorf("validate --json: exit %d\n%s%s", code, stdout, stderr)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpExitsZero: -h shows a command's flags and exits 0 everywhere
// ("zkgroup offsets -h" once said "unknown subcommand" and exited 2), and
// every flag of run says what it means and its default.
func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-h"}, {"help"}, {"run", "-h"}, {"validate", "-h"}, {"describe", "-h"}, {"offsets", "-h"},
		{"offsets", "--help"}, {"offsets", "reset", "-h"}, {"offsets", "migrate", "-h"}, {"healthcheck", "-h"}, {"version", "-h"}, {"leave", "-h"},
	} {
		stdout, stderr, code := run(t, args...)
		if code != 0 || stdout+stderr == "" {
			t.Errorf("zkgroup %v: exit %d, output %q", args, code, stdout+stderr)
		}
	}
	_, help, _ := run(t, "run", "-h")
	lines := strings.Split(help, "\n")
	flags := 0
	for i, l := range lines {
		if !strings.HasPrefix(l, "  -") {
			continue
		}
		flags++
		text := ""
		for j := i + 1; j < len(lines) && strings.HasPrefix(lines[j], "    "); j++ {
			text += lines[j]
		}
		if strings.TrimSpace(text) == "" || !strings.Contains(text, "default") {
			t.Errorf("run -h: %s has no meaning or default: %q", l, text)
		}
	}
	if flags < 40 {
		t.Errorf("run -h lists %d flags:\n%s", flags, help)
	}
	for _, want := range []string{"consumer group to join", `default "127.0.0.1:9779"`, "kafka-sasl-mechanism", "zookeeper-tls-ca-file"} {
		if !strings.Contains(help, want) {
			t.Errorf("run -h lacks %q", want)
		}
	}
}

// TestBadAdminListenExit2: a bad admin port passed validate and made run
// exit 1; both exit 2 now, before anything connects.
func TestBadAdminListenExit2(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"127.0.0.1:99999", "127.0.0.1:http", "9779"} {
		cfg := filepath.Join(t.TempDir(), "c.yaml")
		body := "group: g\nzookeeper: 127.0.0.1:1/kafka\nsubscription: t\nadmin:\n  listen: \"" + listen + "\"\n"
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"validate", "run"} {
			_, stderr, code := run(t, cmd, "--config", cfg)
			if code != 2 || !strings.Contains(stderr, "admin.listen") {
				t.Errorf("%s with admin.listen %q: exit %d, stderr %q", cmd, listen, code, stderr)
			}
		}
	}
}

// TestValidateHidesSecrets: validate --json and its errors show neither
// the sink URL's password nor a password read from a file or variable;
// an unset password variable or a missing CA file is a configuration
// error (exit 2) naming the field.
func TestValidateHidesSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pw := filepath.Join(dir, "zk.pw")
	if err := os.WriteFile(pw, []byte("zk-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.yaml")
	body := `group: g
zookeeper: 127.0.0.1:2181/kafka
subscription: t
sink:
  type: http
  http:
    url: https://bob:hunter2@example.com/in
kafka:
  sasl:
    mechanism: SCRAM-SHA-512
    username: alice
    password_env: ZKG_TEST_KAFKA_PW
zookeeper_auth:
  username: zk
  password_file: ` + pw + "\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runEnv(t, []string{"ZKG_TEST_KAFKA_PW=kafka-s3cret"}, "validate", "--config", cfg, "--json")
	if code != 0 || !strings.Contains(stdout, "bob:xxxxx@example.com") {
		t.Fatalf("validate --json: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, secret := range []string{"hunter2", "kafka-s3cret", "zk-s3cret"} {
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("validate --json shows %q:\n%s", secret, stdout)
		}
	}
	stdout, stderr, code = run(t, "validate", "--config", cfg, "--json")
	if code != 2 || !strings.Contains(stderr, "kafka.sasl.password_env") || !strings.Contains(stderr, "ZKG_TEST_KAFKA_PW is not set") {
		t.Fatalf("validate without the password variable: exit %d\n%s%s", code, stdout, stderr)
	}
}

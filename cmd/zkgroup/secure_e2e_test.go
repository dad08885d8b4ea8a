package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// secured describes one way of reaching the secured cluster.
type secured struct {
	brokers   []string
	kafka     string // the kafka: section
	zookeeper string // connect string
	zkSection string // zookeeper_auth: and zookeeper_tls: sections
	env       []string
}

// securedConfig builds a daemon config for the secured cluster; the
// brokers are given (they are registered with several listeners).
func securedConfig(s secured, group, topic, extra string) string {
	return daemonConf{zookeeper: s.zookeeper, group: group, subscription: "static:" + topic,
		extra: fmt.Sprintf("brokers: [%s]\n%s%s%s", strings.Join(s.brokers, ", "), s.kafka, s.zkSection, extra)}.String()
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// consumeAll runs a daemon with cfg until it printed the topic's n
// messages, stops it and checks that each was printed once.
func consumeAll(t *testing.T, cfg string, env []string, topic string, n int) *proc {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.jsonl")
	d := startDaemon(t, runOpts{config: cfg, env: env, stdout: out})
	d.ready(90 * time.Second)
	await(t, 60*time.Second, fmt.Sprintf("%d messages printed", n), func() bool { return len(readLines(t, out)) >= n })
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("daemon exited %d", code)
	}
	checkExactlyOnce(t, topic, n, values(t, readLines(t, out)))
	return d
}

// TestSecuredListeners: the daemon consumes over each secured listener of
// one broker: SASL_SSL with SCRAM-SHA-512 (password from a file), SASL_SSL
// with PLAIN (password from an environment variable), and SSL with a
// client certificate (mutual TLS); the operator commands read the same
// settings from --config.
func TestSecuredListeners(t *testing.T) {
	t.Parallel()
	c := testcluster.SharedSecure(t)
	p := c.PKI()
	scramPW := writeFile(t, "scram.pw", testcluster.ScramPassword+"\n")
	for _, tc := range []struct {
		name string
		s    secured
	}{
		{"SASL_SSL SCRAM-SHA-512", secured{brokers: c.SecureAddrs("SASL_SSL"), kafka: fmt.Sprintf(`kafka:
  tls: {enable: true, ca_file: %q}
  sasl: {mechanism: SCRAM-SHA-512, username: %s, password_file: %q}
`, p.CAFile, testcluster.ScramUser, scramPW)}},
		{"SASL_SSL PLAIN", secured{brokers: c.SecureAddrs("SASL_SSL"), kafka: fmt.Sprintf(`kafka:
  client_id: plain-archiver
  tls: {enable: true, ca_file: %q, server_name: localhost}
  sasl: {mechanism: PLAIN, username: %s, password_env: ZKG_PLAIN_PW}
`, p.CAFile, testcluster.PlainUser), env: []string{"ZKG_PLAIN_PW=" + testcluster.PlainPassword}}},
		{"SSL with client certificate", secured{brokers: c.SecureAddrs("MTLS"), kafka: fmt.Sprintf(`kafka:
  tls: {enable: true, ca_file: %q, cert_file: %q, key_file: %q}
`, p.CAFile, p.ClientCert, p.ClientKey)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const parts, n = 3, 90
			group, topic := groupTopic(t, c, parts, 1)
			testcluster.MustProduce(t, c, topic, parts, 0, n)
			tc.s.zookeeper = c.ZooKeeperConnect()
			cfg := securedConfig(tc.s, group, topic, "")
			consumeAll(t, cfg, tc.s.env, topic, n)
			committed, err := c.CommittedOffsets(ctx(t), group, topic, parts)
			if err != nil {
				t.Fatal(err)
			}
			var sum int64
			for _, off := range committed {
				sum += off
			}
			if sum != n {
				t.Errorf("committed offsets %v add up to %d, want %d", committed, sum, n)
			}
			cfgFile := writeFile(t, "zkgroup.yaml", cfg)
			stdout, stderr, code := runEnv(t, tc.s.env, "describe", "--config", cfgFile)
			if code != 0 || !strings.Contains(stdout, topic) {
				t.Fatalf("describe --config: exit %d: %s%s", code, stdout, stderr)
			}
			if _, stderr, code = runEnv(t, tc.s.env, "offsets", "reset", "--config", cfgFile, "--topic", topic, "--to-earliest", "--execute"); code != 0 {
				t.Fatalf("offsets reset --config: exit %d: %s", code, stderr)
			}
		})
	}
}

// TestSecuredZooKeeper: the daemon registers with digest credentials and
// commits to ZooKeeper; its nodes carry the creator-only-write ACL, so a
// client without the credentials, or with others, can read them but
// cannot create, change or delete any; failed messages are dead-lettered
// over SASL_SSL; the password variables do not reach the exec sink's
// children; describe and offsets reset work over ZooKeeper's secure
// client port (TLS with a client certificate) with the same credentials.
func TestSecuredZooKeeper(t *testing.T) {
	t.Parallel()
	c := testcluster.SharedSecure(t)
	p := c.PKI()
	group, topic, dlq := testcluster.Name(t, "g"), testcluster.Name(t, "t"), testcluster.Name(t, "dlq")
	const parts, n = 4, 120
	for _, tp := range []string{topic, dlq} {
		createTopic(t, c, tp, parts, 1)
	}
	testcluster.MustProduce(t, c, topic, parts, 0, n)
	s := secured{
		brokers:   c.SecureAddrs("SASL_SSL"),
		zookeeper: c.ZooKeeperConnect(),
		kafka: fmt.Sprintf(`kafka:
  tls: {enable: true, ca_file: %q}
  sasl: {mechanism: SCRAM-SHA-512, username: %s, password_env: ZKG_KAFKA_PW}
`, p.CAFile, testcluster.ScramUser),
		zkSection: "zookeeper_auth: {username: zkgroup, password_env: ZKG_ZK_PW}\noffset_storage: zookeeper\n",
		env:       []string{"ZKG_KAFKA_PW=" + testcluster.ScramPassword, "ZKG_ZK_PW=zk-s3cret"},
	}
	// Odd offsets fail (and so does every message should a password
	// variable reach the child): those are dead-lettered.
	script := writeFile(t, "sink.sh", `test -z "$ZKG_ZK_PW$ZKG_KAFKA_PW" || exit 9
case $ZKGROUP_OFFSET in *[13579]) exit 1;; esac
printf '{"value":"%s"}\n' "$(cat)"
`)
	sinkCfg := fmt.Sprintf(`sink:
  type: exec
  exec:
    command: ["/bin/sh", %q]
  retry: {max_attempts: 1}
  on_failure: dead-letter
  dead_letter_topic: %s
`, script, dlq)
	cfg := securedConfig(s, group, topic, sinkCfg)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	d := startDaemon(t, runOpts{config: cfg, env: s.env, stdout: out})
	d.ready(90 * time.Second)
	await(t, 60*time.Second, "every even offset printed", func() bool { return len(readLines(t, out)) >= n/2 })
	await(t, 60*time.Second, "every odd offset dead-lettered", func() bool {
		hwm, err := c.HighWaterMarks(dlq)
		var sum int64
		for _, v := range hwm {
			sum += v
		}
		return err == nil && sum >= n/2
	})

	// A foreign client: reads work, writes are refused.
	conn := testcluster.ZooKeeper(t, c)
	base := c.Chroot() + "/consumers/" + group
	owners, _, err := conn.Children(base + "/owners/" + topic)
	if err != nil || len(owners) != parts {
		t.Fatalf("owners readable by anyone: %v %v", owners, err)
	}
	intruder := testcluster.ZooKeeper(t, c)
	if err := intruder.AddAuth("digest", []byte("mallory:guess")); err != nil {
		t.Fatal(err)
	}
	for who, z := range map[string]*zk.Conn{"no credentials": conn, "other credentials": intruder} {
		attempts := map[string]error{}
		_, attempts["create a member"] = z.Create(base+"/ids/mallory", []byte("{}"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		_, attempts["create an owner"] = z.Create(base+"/owners/"+topic+"/99", []byte("mallory"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		_, attempts["change an offset"] = z.Set(base+"/offsets/"+topic+"/0", []byte("0"), -1)
		attempts["delete an owner"] = z.Delete(base+"/owners/"+topic+"/0", -1)
		attempts["delete the offsets"] = z.Delete(base+"/offsets/"+topic+"/1", -1)
		for what, err := range attempts {
			if !errors.Is(err, zk.ErrNoAuth) {
				t.Errorf("%s: %s: got %v, want ErrNoAuth", who, what, err)
			}
		}
	}
	acl, _, err := conn.GetACL(base + "/ids")
	if err != nil || len(acl) != 2 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "zkgroup:") {
		t.Errorf("ACL of the ids node: %+v %v", acl, err)
	}

	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("daemon exited %d", code)
	}
	seen := values(t, readLines(t, out))
	if len(seen) != n/2 {
		t.Errorf("printed %d messages, want %d", len(seen), n/2)
	}

	// The operator commands over ZooKeeper TLS with the credentials.
	s.zookeeper = c.ZooKeeperSecureConnect()
	s.zkSection += fmt.Sprintf("zookeeper_tls: {enable: true, ca_file: %q, cert_file: %q, key_file: %q}\n", p.CAFile, p.ClientCert, p.ClientKey)
	cfg = securedConfig(s, group, topic, sinkCfg)
	cfgFile := writeFile(t, "zkgroup.yaml", cfg)
	stdout, stderr, code := runEnv(t, s.env, "describe", "--config", cfgFile)
	if code != 0 || !strings.Contains(stdout, topic) || !strings.Contains(stdout, "(offsets from zookeeper storage)") {
		t.Fatalf("describe over ZooKeeper TLS: exit %d: %s%s", code, stdout, stderr)
	}
	if _, stderr, code = runEnv(t, s.env, "offsets", "reset", "--config", cfgFile, "--topic", topic, "--to-offset", "2", "--execute"); code != 0 {
		t.Fatalf("offsets reset over ZooKeeper TLS: exit %d: %s", code, stderr)
	}
	if data, _, err := conn.Get(base + "/offsets/" + topic + "/0"); err != nil || string(data) != "2" {
		t.Errorf("offset after reset: %q %v", data, err)
	}
	// The same reset without the credentials is refused (exit 3).
	noAuth := strings.Replace(cfg, "zookeeper_auth: {username: zkgroup, password_env: ZKG_ZK_PW}\n", "", 1)
	_, stderr, code = runEnv(t, s.env, "offsets", "reset", "--config", writeFile(t, "noauth.yaml", noAuth), "--topic", topic, "--to-offset", "1", "--execute")
	if code != 3 || !strings.Contains(stderr, "zookeeper_auth") {
		t.Errorf("reset without ZooKeeper credentials: exit %d: %s", code, stderr)
	}
}

// TestSecuredRefusals: a wrong password, an untrusted server certificate,
// a missing client certificate or the wrong ZooKeeper credentials stop
// the daemon before it joins, with exit status 3 and a message naming the
// setting; the operator commands say the same.
func TestSecuredRefusals(t *testing.T) {
	t.Parallel()
	c := testcluster.SharedSecure(t)
	p := c.PKI()
	other, err := testcluster.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	group, topic := groupTopic(t, c, 1, 1)
	// The group's nodes exist, created with credentials zkgroup:right.
	owner := secured{brokers: c.Addrs(), zookeeper: c.ZooKeeperConnect(),
		zkSection: "zookeeper_auth: {username: zkgroup, password_env: ZKG_ZK_PW}\n", env: []string{"ZKG_ZK_PW=right"}}
	testcluster.MustProduce(t, c, topic, 1, 0, 3)
	consumeAll(t, securedConfig(owner, group, topic, ""), owner.env, topic, 3)

	sasl := func(pw string) secured {
		return secured{brokers: c.SecureAddrs("SASL_SSL"), zookeeper: c.ZooKeeperConnect(), kafka: fmt.Sprintf(`kafka:
  tls: {enable: true, ca_file: %q}
  sasl: {mechanism: SCRAM-SHA-512, username: %s, password_env: ZKG_KAFKA_PW}
`, p.CAFile, testcluster.ScramUser), env: []string{"ZKG_KAFKA_PW=" + pw}}
	}
	for _, tc := range []struct {
		name string
		s    secured
		want []string
	}{
		{"wrong SASL password", sasl("wrong"), []string{"refused the SASL SCRAM-SHA-512 credentials", "alice", "kafka.sasl.username"}},
		{"untrusted broker certificate", secured{brokers: c.SecureAddrs("SASL_SSL"), zookeeper: c.ZooKeeperConnect(), kafka: fmt.Sprintf(`kafka:
  tls: {enable: true, ca_file: %q}
  sasl: {mechanism: SCRAM-SHA-512, username: alice, password_env: ZKG_KAFKA_PW}
`, other.CAFile), env: []string{"ZKG_KAFKA_PW=" + testcluster.ScramPassword}}, []string{"kafka.tls.ca_file", "not signed by a CA"}},
		{"no client certificate", secured{brokers: c.SecureAddrs("MTLS"), zookeeper: c.ZooKeeperConnect(), kafka: fmt.Sprintf(`kafka:
  tls: {enable: true, ca_file: %q}
`, p.CAFile)}, []string{"refused this client's certificate", "kafka.tls.cert_file"}},
		{"untrusted ZooKeeper certificate", secured{brokers: c.Addrs(), zookeeper: c.ZooKeeperSecureConnect(),
			zkSection: fmt.Sprintf("zookeeper_tls: {enable: true, ca_file: %q, cert_file: %q, key_file: %q}\n", other.CAFile, p.ClientCert, p.ClientKey)},
			[]string{"zookeeper_tls.ca_file", "not signed by a CA"}},
		{"other ZooKeeper credentials", secured{brokers: c.Addrs(), zookeeper: c.ZooKeeperConnect(),
			zkSection: "zookeeper_auth: {username: zkgroup, password_env: ZKG_ZK_PW}\n", env: []string{"ZKG_ZK_PW=wrong"}},
			[]string{"other credentials", "zookeeper_auth", "/consumers/" + group, "may not be written by this client (digest user zkgroup)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := testcluster.Name(t, "g") // a group of its own: no ACL in the way
			if tc.name == "other ZooKeeper credentials" {
				g = group
			}
			cfg := securedConfig(tc.s, g, topic, "")
			d := startDaemon(t, runOpts{config: cfg, env: tc.s.env})
			code := d.wait(60 * time.Second)
			msg := d.stderr.String()
			if code != 3 {
				t.Errorf("exit %d, want 3:\n%s", code, tail(msg, 10))
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr lacks %q:\n%s", w, tail(msg, 10))
				}
			}
			if strings.Contains(msg, "wrong") && tc.name == "wrong SASL password" {
				t.Errorf("the password is printed:\n%s", msg)
			}
			_, stderr, code := runEnv(t, tc.s.env, "describe", "--config", writeFile(t, "c.yaml", cfg))
			if tc.name != "other ZooKeeper credentials" && (code != 3 || !strings.Contains(stderr, tc.want[0])) {
				t.Errorf("describe: exit %d: %s", code, stderr)
			}
			// validate --connect meets the same refusal as run, with run's hint.
			_, stderr, code = runEnv(t, tc.s.env, "validate", "--connect", "--config", writeFile(t, "c.yaml", cfg))
			if code != 3 || !strings.Contains(stderr, tc.want[0]) {
				t.Errorf("validate --connect: exit %d: %s", code, stderr)
			}
		})
	}
}

// TestSecuredZooKeeperTLSRun: the daemon itself over ZooKeeper's secure
// client port, with a client certificate and digest credentials.
func TestSecuredZooKeeperTLSRun(t *testing.T) {
	t.Parallel()
	c := testcluster.SharedSecure(t)
	p := c.PKI()
	const parts, n = 2, 40
	group, topic := groupTopic(t, c, parts, 1)
	testcluster.MustProduce(t, c, topic, parts, 0, n)
	s := secured{brokers: c.Addrs(), zookeeper: c.ZooKeeperSecureConnect(),
		zkSection: fmt.Sprintf("zookeeper_auth: {username: zkgroup, password_env: ZKG_ZK_PW}\nzookeeper_tls: {enable: true, ca_file: %q, cert_file: %q, key_file: %q}\n",
			p.CAFile, p.ClientCert, p.ClientKey),
		env: []string{"ZKG_ZK_PW=zk-s3cret"}}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	d := startDaemon(t, runOpts{config: securedConfig(s, group, topic, ""), env: s.env, stdout: out})
	await(t, 90*time.Second, "the daemon ready or exited", func() bool { return d.exited() || d.notify.has("READY=1") })
	if d.exited() {
		msg := d.stderr.String()
		t.Fatalf("daemon exited %d before it was ready:\n%s", d.code, tail(msg, 10))
	}
	await(t, 60*time.Second, "every message printed", func() bool { return len(readLines(t, out)) >= n })
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("daemon exited %d", code)
	}
	checkExactlyOnce(t, topic, n, values(t, readLines(t, out)))
}

// exited reports whether the daemon has exited.
func (d *proc) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// has reports whether a datagram held line.
func (n *notifySocket) has(line string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range n.msgs {
		for _, l := range strings.Split(m, "\n") {
			if l == line {
				return true
			}
		}
	}
	return false
}

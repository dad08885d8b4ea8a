package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

func TestValidateSecurity(t *testing.T) {
	assertRefused(t, []refusal{
		{"kafka.client_id", func(c *Config) { c.Kafka.ClientID = "" }},
		{"kafka.client_id", func(c *Config) { c.Kafka.ClientID = "two\nlines" }},
		{"kafka.rack", func(c *Config) { c.Kafka.Rack = "two\nlines" }},
		{"kafka.version", func(c *Config) { c.Kafka.Version = "two" }},
		{"kafka.version", func(c *Config) { c.Kafka.Version = "0.10.0.0" }},
		{"kafka.tls.ca_file", func(c *Config) { c.Kafka.TLS.CAFile = "/ca.pem" }},
		{"kafka.tls.key_file", func(c *Config) { c.Kafka.TLS.Enable = true; c.Kafka.TLS.CertFile = "/c.pem" }},
		{"kafka.sasl.mechanism", func(c *Config) { c.Kafka.SASL.Mechanism = "GSSAPI" }},
		{"kafka.sasl.mechanism", func(c *Config) { c.Kafka.SASL.Username = "u" }},
		{"kafka.sasl.username", func(c *Config) { c.Kafka.SASL.Mechanism = SASLPlain; c.Kafka.SASL.PasswordEnv = "P" }},
		{"kafka.sasl.password_file", func(c *Config) { c.Kafka.SASL.Mechanism = SASLScramSHA512; c.Kafka.SASL.Username = "u" }},
		{"kafka.sasl.password_env", func(c *Config) {
			c.Kafka.SASL.Mechanism, c.Kafka.SASL.Username = SASLScramSHA512, "u"
			c.Kafka.SASL.PasswordEnv, c.Kafka.SASL.PasswordFile = "P", "/p"
		}},
		{"kafka.sasl.password_env", func(c *Config) {
			c.Kafka.SASL.Mechanism, c.Kafka.SASL.Username, c.Kafka.SASL.PasswordEnv = SASLScramSHA512, "u", "$P"
		}},
		{"zookeeper_auth.username", func(c *Config) { c.ZooKeeperAuth.PasswordEnv = "P" }},
		{"zookeeper_auth.username", func(c *Config) { c.ZooKeeperAuth.Username = "a:b"; c.ZooKeeperAuth.PasswordEnv = "P" }},
		{"zookeeper_auth.username", func(c *Config) { c.ZooKeeperAuth.Username = "a\x1b[2J"; c.ZooKeeperAuth.PasswordEnv = "P" }},
		{"kafka.sasl.username", func(c *Config) {
			c.Kafka.SASL.Mechanism, c.Kafka.SASL.Username, c.Kafka.SASL.PasswordEnv = SASLPlain, "a\x00b", "P"
		}},
		{"kafka.sasl.username", func(c *Config) {
			c.Kafka.SASL.Mechanism, c.Kafka.SASL.Username, c.Kafka.SASL.PasswordEnv = SASLScramSHA256, "a\u009bb", "P"
		}},
		{"zookeeper_auth.password_file", func(c *Config) { c.ZooKeeperAuth.Username = "zk" }},
		{"zookeeper_tls.server_name", func(c *Config) { c.ZooKeeperTLS.ServerName = "zk" }},
		{"session_timeout", func(c *Config) { c.SessionTimeout = Duration(3e11) }},
		{"admin.listen", func(c *Config) { c.Admin.Listen = "127.0.0.1:99999" }},
		{"admin.listen", func(c *Config) { c.Admin.Listen = "127.0.0.1:http" }},
		{"brokers", func(c *Config) { c.Brokers = []string{"h:0"} }},
	})
}

func writeSecret(t *testing.T, s string) string {
	t.Helper()
	return writeTemp(t, "secret", s)
}

const secureYAML = validYAML + `kafka:
  client_id: billing-archiver
  version: 3.9.0
  sasl:
    mechanism: SCRAM-SHA-512
    username: alice
    password_env: KAFKA_PW
zookeeper_auth:
  username: zkuser
  password_file: %s
`

// TestResolveSecrets: passwords come from a file and an environment
// variable, reach the clients, and are printed nowhere.
func TestResolveSecrets(t *testing.T) {
	const kafkaPW, zkPW = "kafka-s3cret", "zk-s3cret"
	yml := fmt.Sprintf(secureYAML, writeSecret(t, zkPW+"\n"))
	c := load(t, yml, nil)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := c.Resolve(env(nil)); err == nil || !strings.Contains(err.Error(), "KAFKA_PW is not set") {
		t.Fatalf("Resolve without the variable = %v", err)
	}
	if err := c.Resolve(env(map[string]string{"KAFKA_PW": kafkaPW})); err != nil {
		t.Fatal(err)
	}
	s, err := c.Sarama()
	if err != nil {
		t.Fatal(err)
	}
	if !s.Net.SASL.Enable || s.Net.SASL.Mechanism != sarama.SASLTypeSCRAMSHA512 || s.Net.SASL.User != "alice" ||
		s.Net.SASL.Password != kafkaPW || s.Net.SASL.SCRAMClientGeneratorFunc == nil || s.ClientID != "billing-archiver" ||
		s.Version != sarama.V3_9_0_0 {
		t.Fatalf("sarama config: %+v", s.Net.SASL)
	}
	m, _, err := c.Manager(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Auth) != 1 || m.Auth[0].Scheme != "digest" || m.Auth[0].Credentials != "zkuser:"+zkPW || m.Sarama == nil {
		t.Fatalf("manager auth %+v", m.Auth)
	}
	if got := c.PasswordEnv(); len(got) != 1 || got[0] != "KAFKA_PW" {
		t.Fatalf("PasswordEnv = %v", got)
	}
	user, pw, ok := c.ZooKeeperCredentials()
	for _, out := range []string{fmt.Sprint(pw), fmt.Sprintf("%v %+v %#v", c, c, pw), must(json.Marshal(c)), must(json.Marshal(pw))} {
		if strings.Contains(out, kafkaPW) || strings.Contains(out, zkPW) {
			t.Fatalf("a password is printed: %s", out)
		}
	}
	if !ok || user != "zkuser" || pw.Reveal() != zkPW {
		t.Fatalf("credentials %q %v", user, ok)
	}
}

func must(b []byte, err error) string {
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestResolveErrors(t *testing.T) {
	dir := t.TempDir()
	p, err := testcluster.NewPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, field, want string
		set               func(*Config)
	}{
		{"missing password file", "zookeeper_auth.password_file", "cannot read the password file", func(c *Config) {
			c.ZooKeeperAuth = ZooKeeperAuth{Username: "u", PasswordFile: filepath.Join(dir, "nope")}
		}},
		{"empty password file", "zookeeper_auth.password_file", "empty", func(c *Config) {
			c.ZooKeeperAuth = ZooKeeperAuth{Username: "u", PasswordFile: writeSecret(t, "\n")}
		}},
		{"two-line password file", "kafka.sasl.password_file", "more than one line", func(c *Config) {
			c.Kafka.SASL = SASL{Mechanism: SASLPlain, Username: "u", PasswordFile: writeSecret(t, "a\nb\n")}
		}},
		{"empty password variable", "kafka.sasl.password_env", "EMPTY_PW is empty", func(c *Config) {
			c.Kafka.SASL = SASL{Mechanism: SASLPlain, Username: "u", PasswordEnv: "EMPTY_PW"}
		}},
		{"missing CA", "kafka.tls.ca_file", "cannot read the CA file", func(c *Config) {
			c.Kafka.TLS = TLS{Enable: true, CAFile: filepath.Join(dir, "none.pem")}
		}},
		{"CA not PEM", "zookeeper_tls.ca_file", "no PEM certificate", func(c *Config) {
			c.ZooKeeperTLS = TLS{Enable: true, CAFile: writeSecret(t, "not a certificate")}
		}},
		{"key of another cert", "kafka.tls.cert_file", "cannot load", func(c *Config) {
			c.Kafka.TLS = TLS{Enable: true, CAFile: p.CAFile, CertFile: p.ClientCert, KeyFile: p.ServerKey}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := changed(t, tc.set)
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			err := c.Resolve(env(map[string]string{"EMPTY_PW": ""}))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrConfig) {
				t.Fatalf("Resolve = %v, want %s: %s", err, tc.field, tc.want)
			}
		})
	}
	// A complete mutual-TLS section loads.
	c := load(t, validYAML, nil)
	c.Kafka.TLS = TLS{Enable: true, CAFile: p.CAFile, CertFile: p.ClientCert, KeyFile: p.ClientKey}
	c.ZooKeeperTLS = TLS{Enable: true, CAFile: p.CAFile, ServerName: "localhost"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sarama(); err == nil {
		t.Fatal("Sarama before Resolve with TLS on: no error")
	}
	if err := c.Resolve(nil); err != nil {
		t.Fatal(err)
	}
	s, err := c.Sarama()
	if err != nil || !s.Net.TLS.Enable || len(s.Net.TLS.Config.Certificates) != 1 || s.Net.TLS.Config.RootCAs == nil {
		t.Fatalf("sarama TLS: %v %+v", err, s.Net.TLS)
	}
	if z := c.ZooKeeperTLSConfig(); z == nil || z.ServerName != "localhost" {
		t.Fatalf("ZooKeeper TLS %+v", z)
	}
}

// TestUsernameControlCharacters: a NUL or another control character in a
// user name is refused for what it is (a newline in the ZooKeeper user was
// refused as a ':'), and the value is shown escaped.
func TestUsernameControlCharacters(t *testing.T) {
	for _, tc := range []refusal{
		{"kafka.sasl.username", func(c *Config) {
			c.Kafka.SASL.Mechanism, c.Kafka.SASL.Username, c.Kafka.SASL.PasswordEnv = SASLPlain, "ali\x00ce", "P"
		}},
		{"zookeeper_auth.username", func(c *Config) { c.ZooKeeperAuth.Username, c.ZooKeeperAuth.PasswordEnv = "zk\nuser", "P" }},
	} {
		c := changed(t, tc.set)
		err := c.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), "control characters") ||
			strings.ContainsAny(err.Error(), "\x00\n") {
			t.Errorf("Validate = %q, want %s refused for its control character, shown escaped", err, tc.field)
		}
	}
}

// TestURLQueryRedacted: a token in the http sink URL's query string is
// hidden like its password, in errors and by RedactURL (validate --json),
// every value of the query: the names stay.
func TestURLQueryRedacted(t *testing.T) {
	c := load(t, validYAML+"sink:\n  type: http\n  http:\n    url: \"gopher://h/in?token=s3cr3t&sig=abc\"\n", nil)
	err := c.Validate()
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "token=xxxxx&sig=xxxxx") {
		t.Fatalf("Validate = %v", err)
	}
	// A URL that does not parse: url.Parse's error quotes it whole.
	c.Sink.HTTP.URL = "http://h/in?token=s3cr3t\x7f"
	if err = c.Validate(); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("Validate = %v", err)
	}
	for in, want := range map[string]string{
		"https://u:p@h/x?token=t&api_key=k&flag#f": "https://u:xxxxx@h/x?token=xxxxx&api_key=xxxxx&xxxxx#f",
		"http://h/x?a=1&&b=":                       "http://h/x?a=xxxxx&&b=xxxxx",
		"http://h/x":                               "http://h/x",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestURLPasswordRedacted: the password of an http sink URL appears in no
// error text.
func TestURLPasswordRedacted(t *testing.T) {
	c := load(t, validYAML+"sink:\n  type: http\n  http:\n    url: https://bob:hunter2@example.com/in\n    timeout: 0s\n", nil)
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "sink.http.timeout") {
		t.Fatalf("Validate = %v", err)
	}
	c.Sink.HTTP.Timeout = 0
	c.Sink.HTTP.URL = "gopher://bob:hunter2@example.com/in"
	err = c.Validate()
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "bob:xxxxx@") {
		t.Fatalf("Validate = %v", err)
	}
	if got := RedactURL("http://u:p@h/x"); got != "http://u:xxxxx@h/x" {
		t.Fatalf("RedactURL = %q", got)
	}
}

// TestIsolationLevel: kafka.isolation_level reaches the sarama config the
// consumer's fetcher reads; the default is read_uncommitted.
func TestIsolationLevel(t *testing.T) {
	for _, tc := range []struct {
		level string
		want  sarama.IsolationLevel
	}{{"", sarama.ReadUncommitted}, {IsolationReadUncommitted, sarama.ReadUncommitted}, {IsolationReadCommitted, sarama.ReadCommitted}} {
		c := Default()
		if tc.level != "" {
			c.Kafka.IsolationLevel = tc.level
		}
		s, err := c.Sarama()
		if err != nil {
			t.Fatal(err)
		}
		if s.Consumer.IsolationLevel != tc.want {
			t.Errorf("isolation_level %q: sarama's %v; want %v", tc.level, s.Consumer.IsolationLevel, tc.want)
		}
	}
}

// TestRack: kafka.rack reaches the sarama config the consumer's fetcher
// reads (RackID); the default is none.
func TestRack(t *testing.T) {
	for _, rack := range []string{"", "eu-west-1b"} {
		c := Default()
		c.Kafka.Rack = rack
		s, err := c.Sarama()
		if err != nil {
			t.Fatal(err)
		}
		if s.RackID != rack {
			t.Errorf("rack %q: sarama's RackID %q", rack, s.RackID)
		}
	}
}
